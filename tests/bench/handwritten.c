/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * handwritten - what a user writes without pmadvise: one process_madvise
 * call per line of /proc/PID/maps ([vvar], [vvar_vclock] and [vsyscall]
 * left out, as pmadvise --select all does).
 *
 * Usage: handwritten PID ADVICE_NUMBER
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "syscalls.h"

int main(int argc, char **argv)
{
	char path[64], line[4096];
	int pidfd, advice, failed = 0;
	FILE *maps;

	if (argc != 3) {
		fprintf(stderr, "Usage: handwritten PID ADVICE_NUMBER\n");
		return EXIT_FAILURE;
	}
	advice = atoi(argv[2]);
	pidfd = (int) syscall(SYS_pidfd_open, atoi(argv[1]), 0);
	snprintf(path, sizeof(path), "/proc/%s/maps", argv[1]);
	maps = fopen(path, "r");
	if (pidfd < 0 || !maps) {
		fprintf(stderr, "handwritten: PID %s: %s\n", argv[1], strerror(errno));
		return EXIT_FAILURE;
	}
	while (fgets(line, sizeof(line), maps)) {
		unsigned long start, end;
		struct iovec iov;

		if (strstr(line, "[vvar") || strstr(line, "[vsyscall]"))
			continue;
		if (sscanf(line, "%lx-%lx", &start, &end) != 2)
			continue;
		iov.iov_base = (void *) start;
		iov.iov_len = end - start;
		if (syscall(SYS_process_madvise, pidfd, &iov, 1, advice, 0) < 0) {
			fprintf(stderr, "handwritten: %lx-%lx: %s\n", start, end, strerror(errno));
			failed = 1;
		}
	}
	fclose(maps);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
