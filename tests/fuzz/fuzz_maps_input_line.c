/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libFuzzer harness: parse_maps_input_line() (lines of a --maps file: maps
 * lines or bare START-END).
 */
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *line = fuzz_string(data, size);
	const char *why = NULL, *p;
	struct range r;
	int rc;

	rc = parse_maps_input_line(line, FUZZ_PAGE_SIZE, &r, &why);
	if (rc == -ENODATA) {
		/* only a blank line is skipped */
		for (p = line; *p == ' ' || *p == '\t'; p++)
			;
		fuzz_check(*p == '\0' || *p == '\n');
	} else if (rc == 0) {
		fuzz_check(r.form == RANGE_SPAN);
		fuzz_check_range(&r);
	} else {
		fuzz_check_failure(rc, why);
	}
	free(line);
	return 0;
}
