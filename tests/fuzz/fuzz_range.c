/* SPDX-License-Identifier: GPL-2.0-or-later */
/* libFuzzer harness: parse_range() (RANGE arguments) and parse_address(). */
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = fuzz_string(data, size);
	struct range r;
	const char *why = NULL;
	uint64_t addr;
	int rc;

	rc = parse_range(s, FUZZ_PAGE_SIZE, &r, &why);
	if (rc == 0)
		fuzz_check_range(&r);
	else
		fuzz_check_failure(rc, why);

	/* an address alone is a RANGE of the ADDR form, if it is low enough */
	why = NULL;
	rc = parse_address(s, &addr, &why);
	if (rc != 0)
		fuzz_check_failure(rc, why);
	else if (addr < USER_ADDRESS_LIMIT) {
		fuzz_check(parse_range(s, FUZZ_PAGE_SIZE, &r, &why) == 0);
		fuzz_check(r.form == RANGE_MAPPING && r.start == addr);
	}
	free(s);
	return 0;
}
