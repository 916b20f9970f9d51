/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * maptarget - a process with known mappings, for the pmadvise test suite.
 *
 * Usage: maptarget [-d DIR] SPEC...
 *
 * Maps one region per SPEC, prints "LABEL START END[ PATH]" for each (hex,
 * END exclusive, as in /proc/PID/maps), then "ready", and waits until
 * SIGTERM or SIGINT (exit 0). Files it created are removed at exit.
 *
 * SPECs:
 *   anon=SIZE          private anonymous rw, every page written
 *   anon-half=SIZE     private anonymous rw, first half of the pages written
 *   file=SIZE          private read-only mapping of a new file, every page read
 *   file-shared=SIZE   shared rw mapping of a new file, every page read
 *   locked=SIZE        private anonymous rw, written and mlock()ed
 *   aligned=SIZE       private anonymous rw, start 2 MiB aligned, written
 *   many=N             N one-page mappings, alternately rw and read-only
 *   hole=SIZE          private anonymous rw with its middle page unmapped
 *   named=NAME:SIZE    private anonymous rw named [anon:NAME], written
 *   untouched=SIZE     private anonymous rw, MAP_NORESERVE, never touched (costs no memory)
 *   zero=SIZE          private anonymous rw, every page read, never written
 *                      (each page maps the shared zero page: no Rss)
 *   same=SIZE          private anonymous rw, every page written with the same
 *                      non-zero bytes, in every maptarget process: KSM can merge
 *                      them (no madvise: KSM scans them only when the process
 *                      has opted in, for example under 'pmadvise mergeable --')
 *
 * Every region sits between PROT_NONE guard pages so that the kernel never
 * merges it with a neighbouring mapping: each region is its own VMA(s).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef PR_SET_VMA
# define PR_SET_VMA		0x53564d41
#endif
#ifndef PR_SET_VMA_ANON_NAME
# define PR_SET_VMA_ANON_NAME	0
#endif

#define HUGE_ALIGN	(2UL << 20)
#define MAX_SPECS	256

static size_t page_size;
static uint64_t fill_counter;	/* makes every written page different */

static char *created_files[MAX_SPECS];
static size_t ncreated;

static volatile sig_atomic_t stop_requested;

static void remove_created_files(void)
{
	size_t i;

	for (i = 0; i < ncreated; i++) {
		unlink(created_files[i]);
		free(created_files[i]);
	}
	ncreated = 0;
}

static void __attribute__((noreturn, format(printf, 1, 2)))
die(const char *fmt, ...)
{
	va_list ap;

	fputs("maptarget: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	remove_created_files();
	exit(EXIT_FAILURE);
}

static void __attribute__((noreturn)) usage(void)
{
	fputs("Usage: maptarget [-d DIR] SPEC...\n"
	      "SPEC: anon=SIZE anon-half=SIZE file=SIZE file-shared=SIZE locked=SIZE\n"
	      "      aligned=SIZE many=N hole=SIZE named=NAME:SIZE untouched=SIZE\n"
	      "      zero=SIZE same=SIZE\n"
	      "SIZE: bytes, or with a K, M or G suffix (powers of 1024)\n", stderr);
	exit(EXIT_FAILURE);
}

static void on_stop_signal(int sig)
{
	(void)sig;
	stop_requested = 1;
}

/* Decimal number with an optional K/M/G suffix, rounded up to whole pages. */
static size_t parse_size(const char *str, const char *spec)
{
	unsigned long long value, mult = 1;
	char *end;

	errno = 0;
	if (*str < '0' || *str > '9')
		die("%s: bad size '%s'", spec, str);
	value = strtoull(str, &end, 10);
	if (errno)
		die("%s: bad size '%s'", spec, str);
	switch (*end) {
	case 'G': case 'g': mult <<= 10; /* fall through */
	case 'M': case 'm': mult <<= 10; /* fall through */
	case 'K': case 'k': mult <<= 10; end++; break;
	default: break;
	}
	if (*end != '\0')
		die("%s: bad size '%s'", spec, str);
	if (value == 0)
		die("%s: size must not be zero", spec);
	if (value > (SIZE_MAX / 2) / mult)
		die("%s: size '%s' too large", spec, str);
	value *= mult;
	return (value + page_size - 1) / page_size * page_size;
}

/*
 * Reserve SIZE bytes aligned to ALIGN with one PROT_NONE guard page on each
 * side; the caller maps its region over the reservation with MAP_FIXED.
 */
static char *reserve_span(size_t size, size_t align)
{
	size_t len = size + align + 2 * page_size;
	char *base, *start, *end;

	base = mmap(NULL, len, PROT_NONE,
		    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (base == MAP_FAILED)
		die("cannot reserve %zu bytes: %s", len, strerror(errno));

	start = (char *)(((uintptr_t)base + page_size + align - 1) & ~(uintptr_t)(align - 1));
	end = start + size;
	if (start - page_size > base)
		munmap(base, start - page_size - base);
	if (end + page_size < base + len)
		munmap(end + page_size, base + len - end - page_size);
	return start;
}

static char *map_anon_fixed(char *addr, size_t size, int prot)
{
	char *p = mmap(addr, size, prot, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);

	if (p == MAP_FAILED)
		die("cannot map %zu anonymous bytes: %s", size, strerror(errno));
	return p;
}

/* Nonzero data, different in every page, so that KSM never merges them by accident. */
static void fill_page(char *page)
{
	uint64_t stamp = ((uint64_t)getpid() << 40) | ++fill_counter;

	memset(page, 0x5a, page_size);
	memcpy(page, &stamp, sizeof(stamp));
}

/* The same non-zero bytes in every page and every process: KSM merges them. */
static void write_same_pages(char *start, size_t size)
{
	size_t off;

	/* a pattern within the page (never all zero), then copies of that page */
	for (off = 0; off < page_size; off++)
		start[off] = (char)(0xa5 ^ (off % 251));
	for (off = page_size; off < size; off += page_size)
		memcpy(start + off, start, page_size);
}

static void write_pages(char *start, size_t npages)
{
	size_t i;

	for (i = 0; i < npages; i++)
		fill_page(start + i * page_size);
}

/*
 * Pages just faulted in wait in per-CPU batches before they reach the LRU
 * lists, and madvise(MADV_COLD/MADV_PAGEOUT) passes over pages that are not
 * on them: a test that advises at once could find the last pages written
 * still referenced.  move_pages(2) drains the batches of every CPU before it
 * moves anything (here: one page of our own to the node it is on already).
 * Without NUMA support it fails; nothing else to do then.
 */
static void drain_lru_batches(void)
{
	unsigned int cpu, node;
	char *page = mmap(NULL, page_size, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	void *pages[1];
	int nodes[1], status[1];

	if (page == MAP_FAILED)
		die("mmap: %s", strerror(errno));
	page[0] = 1;
	if (syscall(SYS_getcpu, &cpu, &node, NULL) == 0) {
		pages[0] = page;
		nodes[0] = (int) node;
		(void) syscall(SYS_move_pages, 0, 1UL, pages, nodes, status, 0);
	}
	munmap(page, page_size);
}

static void read_pages(const char *start, size_t size)
{
	volatile char sink = 0;
	size_t off;

	for (off = 0; off < size; off += page_size)
		sink ^= ((const volatile char *)start)[off];
	(void)sink;
}

static char *map_anon_region(size_t size, size_t align)
{
	char *start = map_anon_fixed(reserve_span(size, align), size,
				     PROT_READ | PROT_WRITE);

	write_pages(start, size / page_size);
	return start;
}

static char *map_file_region(const char *dir, size_t size, int shared, char **path)
{
	char *buf, *start;
	size_t off;
	int fd;

	if (ncreated >= MAX_SPECS)
		die("too many files");
	if (asprintf(path, "%s/maptarget-%d-%zu.dat", dir, (int)getpid(), ncreated) < 0)
		die("out of memory");
	fd = open(*path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0)
		die("cannot create %s: %s", *path, strerror(errno));
	created_files[ncreated++] = strdup(*path);

	buf = malloc(page_size);
	if (!buf)
		die("out of memory");
	for (off = 0; off < size; off += page_size) {
		fill_page(buf);
		if (pwrite(fd, buf, page_size, (off_t)off) != (ssize_t)page_size)
			die("cannot write %s: %s", *path, strerror(errno));
	}
	free(buf);
	/* Clean page cache pages: pageout can drop them without writeback. */
	if (fsync(fd) != 0)
		die("cannot fsync %s: %s", *path, strerror(errno));

	start = mmap(reserve_span(size, page_size), size,
		     shared ? PROT_READ | PROT_WRITE : PROT_READ,
		     (shared ? MAP_SHARED : MAP_PRIVATE) | MAP_FIXED, fd, 0);
	if (start == MAP_FAILED)
		die("cannot map %s: %s", *path, strerror(errno));
	close(fd);
	read_pages(start, size);
	return start;
}

/* N one-page mappings, alternately rw and read-only, so none of them merge. */
static char *map_many(size_t n)
{
	char *start = reserve_span(n * page_size, page_size);
	size_t i;

	for (i = 0; i < n; i++) {
		char *page = map_anon_fixed(start + i * page_size, page_size,
					    PROT_READ | PROT_WRITE);

		fill_page(page);
		if (i % 2 && mprotect(page, page_size, PROT_READ) != 0)
			die("many: mprotect: %s", strerror(errno));
	}
	return start;
}

static void name_region(char *start, size_t size, const char *name)
{
	if (prctl(PR_SET_VMA, PR_SET_VMA_ANON_NAME, (unsigned long)start,
		  (unsigned long)size, (unsigned long)name) != 0)
		die("named=%s: cannot name the mapping (PR_SET_VMA_ANON_NAME, "
		    "needs CONFIG_ANON_VMA_NAME): %s", name, strerror(errno));
}

/* "KEY" for the first SPEC with that key, then "KEY.2", "KEY.3"... */
static void make_label(char *label, size_t len, const char *key, size_t keylen,
		       char **keys, size_t nkeys)
{
	size_t i, seen = 0;

	for (i = 0; i < nkeys; i++)
		if (strlen(keys[i]) == keylen && strncmp(keys[i], key, keylen) == 0)
			seen++;
	if (seen == 0)
		snprintf(label, len, "%.*s", (int)keylen, key);
	else
		snprintf(label, len, "%.*s.%zu", (int)keylen, key, seen + 1);
}

int main(int argc, char **argv)
{
	const char *dir = getenv("TMPDIR");
	char *keys[MAX_SPECS];
	struct sigaction sa;
	sigset_t stopset, oldset;
	int c, i;

	page_size = (size_t)sysconf(_SC_PAGESIZE);
	if (!dir || !*dir)
		dir = "/tmp";

	while ((c = getopt(argc, argv, "d:h")) != -1) {
		switch (c) {
		case 'd':
			dir = optarg;
			break;
		default:
			usage();
		}
	}
	if (optind >= argc)
		usage();
	if (argc - optind > MAX_SPECS)
		die("at most %d SPECs", MAX_SPECS);

	/* Block the stop signals now; sigsuspend() below takes them without a race. */
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_stop_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigemptyset(&stopset);
	sigaddset(&stopset, SIGTERM);
	sigaddset(&stopset, SIGINT);
	sigprocmask(SIG_BLOCK, &stopset, &oldset);

	for (i = optind; i < argc; i++) {
		const char *spec = argv[i];
		const char *eq = strchr(spec, '=');
		const char *value;
		char label[64], *path = NULL;
		char *start = NULL;
		size_t size = 0, keylen;

		if (!eq || eq == spec)
			die("bad SPEC '%s' (expected KEY=VALUE)", spec);
		keylen = (size_t)(eq - spec);
		value = eq + 1;
		make_label(label, sizeof(label), spec, keylen, keys, (size_t)(i - optind));
		keys[i - optind] = strndup(spec, keylen);

#define KEY_IS(name) (keylen == strlen(name) && strncmp(spec, name, keylen) == 0)
		if (KEY_IS("anon")) {
			size = parse_size(value, spec);
			start = map_anon_region(size, page_size);
		} else if (KEY_IS("anon-half")) {
			size = parse_size(value, spec);
			start = map_anon_fixed(reserve_span(size, page_size), size,
					       PROT_READ | PROT_WRITE);
			write_pages(start, size / page_size / 2);
		} else if (KEY_IS("file") || KEY_IS("file-shared")) {
			size = parse_size(value, spec);
			start = map_file_region(dir, size, KEY_IS("file-shared"), &path);
		} else if (KEY_IS("locked")) {
			size = parse_size(value, spec);
			start = map_anon_region(size, page_size);
			/* Not mlock(): AddressSanitizer turns it into a no-op. */
			if (syscall(SYS_mlock, start, size) != 0)
				die("%s: mlock: %s (raise RLIMIT_MEMLOCK, ulimit -l)",
				    spec, strerror(errno));
		} else if (KEY_IS("aligned")) {
			size = parse_size(value, spec);
			if (size % HUGE_ALIGN)
				die("%s: size must be a multiple of 2M", spec);
			start = map_anon_region(size, HUGE_ALIGN);
		} else if (KEY_IS("many")) {
			char *end;
			unsigned long n;

			errno = 0;
			n = strtoul(value, &end, 10);
			if (errno || end == value || *end || n == 0 || n > 1000000)
				die("%s: bad count '%s'", spec, value);
			size = n * page_size;
			start = map_many(n);
		} else if (KEY_IS("hole")) {
			size = parse_size(value, spec);
			if (size < 3 * page_size)
				die("%s: size must be at least 3 pages", spec);
			start = map_anon_region(size, page_size);
			if (munmap(start + (size / page_size / 2) * page_size, page_size) != 0)
				die("%s: munmap: %s", spec, strerror(errno));
		} else if (KEY_IS("named")) {
			const char *colon = strrchr(value, ':');
			char *name;

			if (!colon || colon == value)
				die("bad SPEC '%s' (expected named=NAME:SIZE)", spec);
			name = strndup(value, (size_t)(colon - value));
			size = parse_size(colon + 1, spec);
			start = map_anon_region(size, page_size);
			name_region(start, size, name);
			free(name);
		} else if (KEY_IS("untouched")) {
			size = parse_size(value, spec);
			start = mmap(reserve_span(size, page_size), size, PROT_READ | PROT_WRITE,
				     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
			if (start == MAP_FAILED)
				die("%s: cannot map: %s", spec, strerror(errno));
		} else if (KEY_IS("same")) {
			size = parse_size(value, spec);
			start = map_anon_fixed(reserve_span(size, page_size), size,
					       PROT_READ | PROT_WRITE);
			write_same_pages(start, size);
		} else if (KEY_IS("zero")) {
			size = parse_size(value, spec);
			start = map_anon_fixed(reserve_span(size, page_size), size,
					       PROT_READ | PROT_WRITE);
			read_pages(start, size);
		} else {
			die("unknown SPEC '%s'", spec);
		}
#undef KEY_IS

		printf("%s %lx %lx", label, (unsigned long)start,
		       (unsigned long)(start + size));
		if (path)
			printf(" %s", path);
		putchar('\n');
		free(path);
	}

	drain_lru_batches();
	puts("ready");
	if (fflush(stdout) != 0)
		die("cannot write to stdout: %s", strerror(errno));

	while (!stop_requested)
		sigsuspend(&oldset);

	remove_created_files();
	for (i = 0; i < argc - optind; i++)
		free(keys[i]);
	return EXIT_SUCCESS;
}
