/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * churn - a process whose mappings change all the time, for the pmadvise
 * race tests.
 *
 * Usage: churn [-d DIR] [-s SEED] [-p PAGES] [-w USEC] LOG
 *
 * Maps an "anchor" (64 KiB of written anonymous memory that never changes)
 * and creates a file in DIR, prints "anchor START END", "arena START END" and
 * "ready", then, until SIGTERM or SIGINT, changes mappings inside the arena
 * (PAGES pages, default 512) only, one system call at a time, in a loop:
 *
 *   map      mmap MAP_FIXED of a random piece, anonymous (written) or of the
 *            file (read), replacing whatever was there
 *   unmap    munmap of a random piece (holes appear)
 *   protect  mprotect of a random piece to PROT_READ or PROT_READ|PROT_WRITE
 *   remap    mremap of a mapping at the same address to another size
 *            (shrink, or grow in place where there is room)
 *
 * Every change that succeeded is appended to LOG as one line
 *   "SEQ map|unmap START END"
 * (hex, END exclusive; a protect changes nothing that is mapped and is not
 * logged; a remap logs the pages it mapped or unmapped).  The line is written
 * right after the system call, and only one change happens at a time, so
 * what is mapped in the arena after line N is exactly what lines 1..N say:
 * a test can tell whether a range was really mapped at some moment between
 * two points of the log.  Nothing else is ever mapped in the arena, and
 * nothing outside it changes once "ready" is printed.  -w waits USEC
 * microseconds after each change (default 0: as fast as it can).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define ANCHOR_SIZE	(64 * 1024)
#define MAX_PIECE_PAGES	16

static size_t page_size;
static volatile sig_atomic_t stop_requested;
static int log_fd = -1;
static unsigned long long seq;
static char file_path[4096];

static void __attribute__((noreturn, format(printf, 1, 2)))
die(const char *fmt, ...)
{
	va_list ap;

	fputs("churn: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	if (*file_path)
		unlink(file_path);
	exit(EXIT_FAILURE);
}

static void on_stop_signal(int sig)
{
	(void)sig;
	stop_requested = 1;
}

/* A small fast generator: the same SEED gives the same sequence of changes. */
static uint64_t rng_state;

static uint64_t next_random(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

static void log_change(const char *what, const char *start, const char *end)
{
	char line[96];
	int len;

	len = snprintf(line, sizeof(line), "%llu %s %lx %lx\n", ++seq, what,
		       (unsigned long)start, (unsigned long)end);
	/* O_APPEND and one write per line: a reader never sees lines mixed */
	if (write(log_fd, line, (size_t)len) != len)
		die("cannot write the log: %s", strerror(errno));
}

static void touch_pages(char *start, size_t size, int write_them)
{
	volatile char sink = 0;
	size_t off;

	for (off = 0; off < size; off += page_size) {
		if (write_them)
			start[off] = (char)(seq | 1);
		else
			sink ^= ((volatile char *)start)[off];
	}
	(void)sink;
}

int main(int argc, char **argv)
{
	const char *dir = getenv("TMPDIR");
	size_t arena_pages = 512, file_pages;
	struct timespec pause = { 0, 0 };
	char *arena, *anchor, *buf;
	struct sigaction sa;
	int c, file_fd;

	page_size = (size_t)sysconf(_SC_PAGESIZE);
	rng_state = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
	if (!dir || !*dir)
		dir = "/tmp";

	while ((c = getopt(argc, argv, "d:s:p:w:")) != -1) {
		switch (c) {
		case 'd':
			dir = optarg;
			break;
		case 's':
			rng_state = strtoull(optarg, NULL, 0);
			break;
		case 'p':
			arena_pages = strtoul(optarg, NULL, 0);
			if (arena_pages < 2 * MAX_PIECE_PAGES || arena_pages > 1 << 20)
				die("-p: between %d and %d pages", 2 * MAX_PIECE_PAGES, 1 << 20);
			break;
		case 'w':
			pause.tv_nsec = (long)(strtoul(optarg, NULL, 10) % 1000000) * 1000;
			break;
		default:
			fputs("Usage: churn [-d DIR] [-s SEED] [-p PAGES] [-w USEC] LOG\n", stderr);
			return EXIT_FAILURE;
		}
	}
	if (optind != argc - 1) {
		fputs("Usage: churn [-d DIR] [-s SEED] [-p PAGES] [-w USEC] LOG\n", stderr);
		return EXIT_FAILURE;
	}
	if (!rng_state)
		rng_state = 1;

	log_fd = open(argv[optind], O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
	if (log_fd < 0)
		die("cannot create %s: %s", argv[optind], strerror(errno));

	/* the file behind file mappings: written and clean, at most 1 MiB */
	snprintf(file_path, sizeof(file_path), "%s/churn-%d.dat", dir, (int)getpid());
	file_fd = open(file_path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (file_fd < 0)
		die("cannot create %s: %s", file_path, strerror(errno));
	file_pages = arena_pages < 256 ? arena_pages : 256;
	buf = malloc(page_size);
	if (!buf)
		die("out of memory");
	memset(buf, 0x5a, page_size);
	for (size_t i = 0; i < file_pages; i++)
		if (pwrite(file_fd, buf, page_size, (off_t)(i * page_size)) != (ssize_t)page_size)
			die("cannot write %s: %s", file_path, strerror(errno));
	free(buf);
	if (fsync(file_fd) != 0)
		die("cannot fsync %s: %s", file_path, strerror(errno));

	anchor = mmap(NULL, ANCHOR_SIZE, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (anchor == MAP_FAILED)
		die("cannot map the anchor: %s", strerror(errno));
	memset(anchor, 0x33, ANCHOR_SIZE);

	/*
	 * Find room for the arena, then leave it empty: only the loop maps
	 * there.  A PROT_NONE guard page stays on each side, so that no
	 * mapping of the arena ever merges with one outside it.
	 */
	arena = mmap(NULL, (arena_pages + 2) * page_size, PROT_NONE,
		     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (arena == MAP_FAILED)
		die("cannot reserve the arena: %s", strerror(errno));
	arena += page_size;
	munmap(arena, arena_pages * page_size);

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_stop_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);

	printf("anchor %lx %lx\narena %lx %lx\nready\n",
	       (unsigned long)anchor, (unsigned long)(anchor + ANCHOR_SIZE),
	       (unsigned long)arena, (unsigned long)(arena + arena_pages * page_size));
	if (fflush(stdout) != 0)
		die("cannot write to stdout: %s", strerror(errno));

	while (!stop_requested) {
		size_t npages = 1 + next_random() % MAX_PIECE_PAGES;
		size_t first = next_random() % (arena_pages - npages + 1);
		char *start = arena + first * page_size;
		size_t size = npages * page_size;
		unsigned int what = next_random() % 8;

		if (pause.tv_nsec)
			nanosleep(&pause, NULL);

		if (what < 3) {
			/* map: anonymous or file, replacing what was there */
			int is_file = what == 2;
			char *p = mmap(start, size, PROT_READ | PROT_WRITE,
				       MAP_PRIVATE | MAP_FIXED | (is_file ? 0 : MAP_ANONYMOUS),
				       is_file ? file_fd : -1,
				       is_file ? (off_t)(first % (file_pages - MAX_PIECE_PAGES + 1)
							 * page_size) : 0);

			if (p == MAP_FAILED)
				die("mmap: %s", strerror(errno));
			log_change("map", start, start + size);
			touch_pages(start, size, !is_file);
		} else if (what < 6) {
			if (munmap(start, size) != 0)
				die("munmap: %s", strerror(errno));
			log_change("unmap", start, start + size);
		} else if (what == 6) {
			/* fails where part of it is not mapped: fine, nothing changed */
			mprotect(start, size, next_random() % 2 ? PROT_READ
				 : PROT_READ | PROT_WRITE);
		} else {
			/* the same address, another size: in place or not at all */
			size_t new_pages = 1 + next_random() % MAX_PIECE_PAGES;
			size_t new_size = new_pages * page_size;

			if (first + new_pages > arena_pages)
				continue;
			if (mremap(start, size, new_size, 0) == MAP_FAILED)
				continue;
			/* old [start, start+size) moved to [start, start+new_size) */
			if (new_size < size)
				log_change("unmap", start + new_size, start + size);
			else if (new_size > size)
				log_change("map", start + size, start + new_size);
		}
	}

	unlink(file_path);
	close(file_fd);
	close(log_fd);
	return EXIT_SUCCESS;
}
