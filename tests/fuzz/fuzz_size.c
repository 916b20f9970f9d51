/* SPDX-License-Identifier: GPL-2.0-or-later */
/* libFuzzer harness: parse_size() (min-size=, max-size=, START+SIZE). */
#include <inttypes.h>

#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = fuzz_string(data, size), buf[32];
	const char *why = NULL;
	uint64_t value, again;
	int rc;

	rc = parse_size(s, &value, &why);
	if (rc != 0) {
		fuzz_check_failure(rc, why);
	} else {
		/* what it accepted reads back the same written in decimal and in hex */
		snprintf(buf, sizeof(buf), "%" PRIu64, value);
		fuzz_check(parse_size(buf, &again, &why) == 0 && again == value);
		snprintf(buf, sizeof(buf), "0x%" PRIx64, value);
		fuzz_check(parse_size(buf, &again, &why) == 0 && again == value);
	}
	free(s);
	return 0;
}
