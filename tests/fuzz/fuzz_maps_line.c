/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libFuzzer harness: parse_maps_line() (lines of /proc/PID/maps), then the
 * mapping tests and a few selectors on what it accepted.
 */
#include "fuzz_common.h"

static const char *const selectors[] = {
	"all", "anon", "file,private", "shared", "heap", "stack",
	"path=*lib*", "perms=r?xp", "min-size=8K,max-size=1M",
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *line = fuzz_string(data, size);
	size_t len = strlen(line), i;
	struct maps_entry e;
	const char *why = NULL;
	int rc;

	rc = parse_maps_line(line, &e, &why);
	if (rc != 0) {
		fuzz_check_failure(rc, why);
		free(line);
		return 0;
	}
	fuzz_check(e.start <= e.end);
	fuzz_check(strlen(e.perms) == PERMS_LEN - 1);
	/* the path is the rest of the line, inside it */
	fuzz_check(e.path >= line && e.path <= line + len);
	fuzz_check(e.path + strlen(e.path) == line + len);
	(void) is_special_mapping(&e);
	(void) is_anon_mapping(&e);
	(void) is_file_mapping(&e);
	for (i = 0; i < sizeof(selectors) / sizeof(selectors[0]); i++) {
		struct selector sel;

		fuzz_check(parse_selector(selectors[i], &sel, &why, NULL) == 0);
		(void) selector_matches(&sel, &e);
		free_selector(&sel);
	}
	free(line);
	return 0;
}
