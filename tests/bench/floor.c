/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * floor - the kernel's own work behind `pmadvise -p PID ADVICE --select all`,
 * and nothing else: read /proc/PID/maps, advise every mapping but [vvar],
 * [vvar_vclock] and [vsyscall] with the same batched process_madvise calls
 * (at most 1024 iovecs and MAX_RW_COUNT bytes a call), print nothing.
 *
 * Usage: floor [-a] PID ADVICE_NUMBER
 *
 * The lower bound for pmadvise in the benchmark (tests/bench/run.sh): no
 * table, no per-piece bookkeeping, no error handling beyond stopping.  It
 * advises each block of maps as soon as it is read; with -a it reads all
 * of maps first and then advises, in pmadvise's order (which selects every
 * piece before the first call): on a process with many mappings the kernel
 * walks them twice either way, but back to back the second walk finds them
 * in the cache.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "syscalls.h"

#define BATCH_MAX_ENTRIES	1024
#define MAX_RW_COUNT		UINT64_C(0x7ffff000)
#define READ_SIZE		(256 * 1024)

static int pidfd, advice;
static struct iovec iov[BATCH_MAX_ENTRIES];
static size_t niov;
static uint64_t room;
static int read_all_first;
static uint64_t (*pieces)[2];
static size_t npieces, pieces_alloc;

static void flush_batch(void)
{
	uint64_t total = MAX_RW_COUNT - room;
	ssize_t ret;

	if (!niov)
		return;
	ret = syscall(SYS_process_madvise, pidfd, iov, niov, advice, 0);
	if (ret < 0 || (uint64_t) ret != total) {
		fprintf(stderr, "floor: process_madvise: %s\n",
			ret < 0 ? strerror(errno) : "short count");
		exit(EXIT_FAILURE);
	}
	niov = 0;
	room = MAX_RW_COUNT;
}

/* A piece too large for what is left of the call goes on in the next one. */
static void add_piece(uint64_t start, uint64_t end)
{
	while (start < end) {
		uint64_t len = end - start < room ? end - start : room;

		iov[niov].iov_base = (void *) (uintptr_t) start;
		iov[niov].iov_len = (size_t) len;
		niov++;
		room -= len;
		start += len;
		if (niov == BATCH_MAX_ENTRIES || room == 0)
			flush_batch();
	}
}

static int is_special(const char *line, const char *eol)
{
	static const char *const names[] = { " [vvar]", " [vvar_vclock]", " [vsyscall]" };
	size_t i;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		size_t len = strlen(names[i]);

		if ((size_t) (eol - line) >= len && memcmp(eol - len, names[i], len) == 0)
			return 1;
	}
	return 0;
}

/* Lines of buf[0..len) that end in '\n'; returns the bytes used. */
static size_t advise_lines(char *buf, size_t len)
{
	char *line = buf, *eol;

	while ((eol = memchr(line, '\n', len - (size_t) (line - buf)))) {
		char *p;
		uint64_t start = strtoull(line, &p, 16), end = strtoull(p + 1, NULL, 16);

		if (is_special(line, eol))
			;
		else if (!read_all_first)
			add_piece(start, end);
		else {
			if (npieces == pieces_alloc) {
				pieces_alloc = pieces_alloc ? 2 * pieces_alloc : 4096;
				pieces = realloc(pieces, pieces_alloc * sizeof(*pieces));
				if (!pieces) {
					fprintf(stderr, "floor: out of memory\n");
					exit(EXIT_FAILURE);
				}
			}
			pieces[npieces][0] = start;
			pieces[npieces][1] = end;
			npieces++;
		}
		line = eol + 1;
	}
	return (size_t) (line - buf);
}

int main(int argc, char **argv)
{
	static char buf[READ_SIZE];
	size_t have = 0;
	char path[64];
	size_t i;
	int fd;

	if (argc == 4 && strcmp(argv[1], "-a") == 0) {
		read_all_first = 1;
		argv++;
		argc--;
	}
	if (argc != 3) {
		fprintf(stderr, "Usage: floor [-a] PID ADVICE_NUMBER\n");
		return EXIT_FAILURE;
	}
	advice = atoi(argv[2]);
	room = MAX_RW_COUNT;
	pidfd = (int) syscall(SYS_pidfd_open, atoi(argv[1]), 0);
	snprintf(path, sizeof(path), "/proc/%s/maps", argv[1]);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (pidfd < 0 || fd < 0) {
		fprintf(stderr, "floor: PID %s: %s\n", argv[1], strerror(errno));
		return EXIT_FAILURE;
	}
	for (;;) {
		ssize_t n = read(fd, buf + have, sizeof(buf) - have);
		size_t used;

		if (n < 0) {
			fprintf(stderr, "floor: %s: %s\n", path, strerror(errno));
			return EXIT_FAILURE;
		}
		if (n == 0)
			break;
		have += (size_t) n;
		used = advise_lines(buf, have);
		memmove(buf, buf + used, have - used);
		have -= used;
	}
	for (i = 0; i < npieces; i++)
		add_piece(pieces[i][0], pieces[i][1]);
	flush_batch();
	free(pieces);
	return EXIT_SUCCESS;
}
