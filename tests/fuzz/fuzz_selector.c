/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libFuzzer harness: parse_selector() (--select, --exclude), then
 * selector_matches() against a fixed set of mappings, then free_selector().
 * LeakSanitizer checks that nothing is lost on either path.
 */
#include "fuzz_common.h"

static const struct maps_entry entries[] = {
	{ 0x400000, 0x401000, 0, 1234, 8, 1, "r-xp", "/usr/bin/maptarget" },
	{ 0x7f0000000000, 0x7f0000200000, 0x1000, 99, 8, 1, "r--p",
	  "/usr/lib/x86_64-linux-gnu/libc.so.6" },
	{ 0x7f0000300000, 0x7f0000301000, 0, 0, 0, 0, "rw-p", "" },
	{ 0x555500000000, 0x555500021000, 0, 0, 0, 0, "rw-p", "[heap]" },
	{ 0x7ffc00000000, 0x7ffc00021000, 0, 0, 0, 0, "rw-p", "[stack]" },
	{ 0x7f0000400000, 0x7f0000800000, 0, 0, 0, 0, "rw-p", "[anon:pmadvise test]" },
	{ 0x7f0000900000, 0x7f0000901000, 0, 5678, 0, 1, "rw-s", "/dev/shm/x (deleted)" },
	{ 0x7ffc00100000, 0x7ffc00102000, 0, 0, 0, 0, "r--p", "[vvar]" },
	{ 0xffffffffff600000, 0xffffffffff601000, 0, 0, 0, 0, "--xp", "[vsyscall]" },
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = fuzz_string(data, size), *bad = NULL;
	struct selector sel;
	const char *why = NULL;
	size_t i;
	int rc;

	rc = parse_selector(s, &sel, &why, &bad);
	if (rc != 0) {
		fuzz_check(rc == -EINVAL || rc == -ERANGE);
		fuzz_check(why != NULL && *why != '\0');
		fuzz_check(sel.terms == NULL && sel.nterms == 0 && sel.text == NULL);
		free(bad);
		free(s);
		return 0;
	}
	fuzz_check(bad == NULL);
	fuzz_check(sel.nterms >= 1 && sel.text != NULL && strcmp(sel.text, s) == 0);
	for (i = 0; i < sel.nterms; i++) {
		const struct selector_term *t = &sel.terms[i];

		fuzz_check((t->pattern != NULL) == (t->kind == SEL_PATH || t->kind == SEL_PERMS));
	}
	for (i = 0; i < sizeof(entries) / sizeof(entries[0]); i++)
		(void) selector_matches(&sel, &entries[i]);
	free_selector(&sel);
	fuzz_check(sel.terms == NULL && sel.nterms == 0 && sel.text == NULL);
	free(s);
	return 0;
}
