/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Shared bits of the libFuzzer harnesses of lib/parse.c: each harness links
 * lib/parse.c itself, turns the fuzzer's bytes into the C string the program
 * would see, and checks what the parser promises on top of what the
 * sanitizers check.  A broken promise is a crash, so that libFuzzer keeps the
 * input.
 */
#ifndef PMADVISE_FUZZ_COMMON_H
#define PMADVISE_FUZZ_COMMON_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "parse.h"

#define FUZZ_PAGE_SIZE	UINT64_C(4096)

/* A broken promise: say which, then crash so that libFuzzer saves the input. */
#define fuzz_check(cond) do {						\
	if (!(cond)) {							\
		fprintf(stderr, "%s:%d: promise broken: %s\n",		\
			__FILE__, __LINE__, #cond);			\
		abort();						\
	}								\
} while (0)

/* The input as a NUL-terminated string (it ends at an embedded NUL, as argv would). */
static inline char *fuzz_string(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);

	if (!s)
		abort();
	memcpy(s, data, size);
	s[size] = '\0';
	return s;
}

/* A failing parser returns -EINVAL or -ERANGE and says why. */
static inline void fuzz_check_failure(int rc, const char *why)
{
	fuzz_check(rc == -EINVAL || rc == -ERANGE);
	fuzz_check(why != NULL && *why != '\0');
}

/* What parse_range and parse_maps_input_line promise for a range they accept. */
static inline void fuzz_check_range(const struct range *r)
{
	if (r->form == RANGE_MAPPING) {
		fuzz_check(r->start < USER_ADDRESS_LIMIT);
		fuzz_check(r->end == r->start + 1);
		return;
	}
	fuzz_check(r->form == RANGE_SPAN || r->form == RANGE_SIZED);
	fuzz_check(r->start % FUZZ_PAGE_SIZE == 0);
	fuzz_check(r->end % FUZZ_PAGE_SIZE == 0);
	fuzz_check(r->start < r->end);
	fuzz_check(r->end <= USER_ADDRESS_LIMIT);
}

#endif /* PMADVISE_FUZZ_COMMON_H */
