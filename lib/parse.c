/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Parsers for sizes, addresses, ranges, /proc/PID/maps lines and selector
 * expressions.  See parse.h.
 */
#include <ctype.h>
#include <errno.h>
#include <fnmatch.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "parse.h"

/* One more than the value of each hex digit, 0 for other bytes (a maps line has ~30 digits). */
static const unsigned char hex_digits[256] = {
	['0'] = 1, ['1'] = 2, ['2'] = 3, ['3'] = 4, ['4'] = 5,
	['5'] = 6, ['6'] = 7, ['7'] = 8, ['8'] = 9, ['9'] = 10,
	['a'] = 11, ['b'] = 12, ['c'] = 13, ['d'] = 14, ['e'] = 15, ['f'] = 16,
	['A'] = 11, ['B'] = 12, ['C'] = 13, ['D'] = 14, ['E'] = 15, ['F'] = 16,
};

static int hex_digit(char c)
{
	return hex_digits[(unsigned char) c] - 1;
}

/*
 * Reads hex digits from *p; at least one, and no more than fit in 64 bits.
 * Leaves *p after the last digit.
 */
static int scan_hex(const char **p, uint64_t *result, const char **why)
{
	const char *s = *p, *first;
	uint64_t value = 0;
	int digit;

	if (hex_digit(*s) < 0) {
		*why = "expected a hexadecimal number";
		return -EINVAL;
	}
	while (*s == '0')
		s++;
	/* 16 significant digits fit: the test is made once, after the loop */
	for (first = s; (digit = hex_digit(*s)) >= 0; s++)
		value = (value << 4) | (uint64_t) digit;
	if (s - first > 16) {
		*why = "number is too large";
		return -ERANGE;
	}
	*p = s;
	*result = value;
	return 0;
}

static int scan_decimal(const char **p, uint64_t *result, const char **why)
{
	const char *s = *p;
	uint64_t value = 0;

	if (!isdigit((unsigned char) *s)) {
		*why = "expected a number";
		return -EINVAL;
	}
	for (; isdigit((unsigned char) *s); s++) {
		unsigned int digit = (unsigned int) (*s - '0');

		if (value > (UINT64_MAX - digit) / 10) {
			*why = "number is too large";
			return -ERANGE;
		}
		value = value * 10 + digit;
	}
	*p = s;
	*result = value;
	return 0;
}

static bool has_hex_prefix(const char *s)
{
	return s[0] == '0' && (s[1] == 'x' || s[1] == 'X');
}

/*
 * Addresses are always hexadecimal, as in /proc/PID/maps; "0x" is optional.
 */
int parse_address(const char *str, uint64_t *result, const char **why)
{
	const char *p = str;
	int rc;

	if (has_hex_prefix(p))
		p += 2;
	rc = scan_hex(&p, result, why);
	if (rc)
		return rc;
	if (*p) {
		*why = "address is not a hexadecimal number";
		return -EINVAL;
	}
	return 0;
}

/*
 * Sizes are decimal with an optional binary suffix (K, M, G, T, also written
 * KiB ...), or hexadecimal when written 0x...; a leading 0 never means octal.
 */
int parse_size(const char *str, uint64_t *result, const char **why)
{
	static const char suffixes[] = "KMGT";
	const char *p = str, *suffix;
	uint64_t value;
	unsigned int shift;
	int rc;

	if (has_hex_prefix(p)) {
		p += 2;
		rc = scan_hex(&p, &value, why);
		if (rc)
			return rc;
		if (*p) {
			*why = "a hexadecimal size takes no suffix";
			return -EINVAL;
		}
		*result = value;
		return 0;
	}

	rc = scan_decimal(&p, &value, why);
	if (rc) {
		if (rc == -EINVAL)
			*why = "size is not a number";
		return rc;
	}
	if (!*p) {
		*result = value;
		return 0;
	}
	suffix = strchr(suffixes, toupper((unsigned char) *p));
	if (!suffix || !*suffix) {
		*why = "unknown size suffix (use K, M, G or T)";
		return -EINVAL;
	}
	p++;
	if (*p && strcmp(p, "iB") != 0) {
		*why = "unknown size suffix (use K, M, G or T)";
		return -EINVAL;
	}
	shift = 10 * (unsigned int) (suffix - suffixes + 1);
	if (value > (UINT64_MAX >> shift)) {
		*why = "size is too large";
		return -ERANGE;
	}
	*result = value << shift;
	return 0;
}

size_t format_decimal(uint64_t value, char *buf)
{
	char reversed[20];
	size_t n = 0, i;

	do {
		reversed[n++] = (char) ('0' + value % 10);
		value /= 10;
	} while (value);
	for (i = 0; i < n; i++)
		buf[i] = reversed[n - 1 - i];
	buf[n] = '\0';
	return n;
}

void size_to_human(uint64_t bytes, char buf[HUMAN_SIZE_LEN])
{
	static const char units[] = "BKMGTPE";
	uint64_t whole = bytes, rest = 0;
	size_t unit = 0, len;

	while (whole >= 1024 && unit < sizeof(units) - 2) {
		rest = whole % 1024;
		whole /= 1024;
		unit++;
	}
	/* one decimal, rounded; 1023.95K stays 1023.9K rather than 1024.0K */
	rest = (rest * 10 + 512) / 1024;
	if (rest >= 10)
		rest = 9;
	/* by hand, not snprintf: a table prints two sizes a row */
	len = format_decimal(whole, buf);
	if (unit != 0 && rest != 0) {
		buf[len++] = '.';
		buf[len++] = (char) ('0' + rest);
	}
	buf[len++] = units[unit];
	buf[len] = '\0';
}

/* Addresses that fit the span of a user address space. */
static int check_span(uint64_t start, uint64_t end, uint64_t page_size,
		      struct range *range, const char **why)
{
	if (start % page_size) {
		*why = "start address is not page-aligned";
		return -EINVAL;
	}
	if (end == start) {
		*why = "range is empty";
		return -EINVAL;
	}
	if (end < start) {
		*why = "range ends before it starts";
		return -EINVAL;
	}
	if (end > UINT64_MAX - (page_size - 1)) {
		*why = "range overflows the address space";
		return -ERANGE;
	}
	end = (end + page_size - 1) & ~(page_size - 1);
	if (end > USER_ADDRESS_LIMIT) {
		*why = "range lies beyond the user address space";
		return -ERANGE;
	}
	range->start = start;
	range->end = end;
	return 0;
}

int parse_range(const char *str, uint64_t page_size,
		struct range *range, const char **why)
{
	const char *p = str;
	uint64_t start, other;
	char sep;
	int rc;

	if (has_hex_prefix(p))
		p += 2;
	rc = scan_hex(&p, &start, why);
	if (rc)
		return rc;

	sep = *p;
	if (!sep) {
		if (start >= USER_ADDRESS_LIMIT) {
			*why = "address lies beyond the user address space";
			return -ERANGE;
		}
		range->start = start;
		range->end = start + 1;
		range->form = RANGE_MAPPING;
		return 0;
	}
	if (sep != '-' && sep != '+') {
		*why = "expected START-END, START+SIZE or ADDR";
		return -EINVAL;
	}
	p++;
	if (!*p) {
		*why = sep == '-' ? "missing end address" : "missing size";
		return -EINVAL;
	}

	if (sep == '-') {
		rc = parse_address(p, &other, why);
		if (rc)
			return rc;
		range->form = RANGE_SPAN;
	} else {
		rc = parse_size(p, &other, why);
		if (rc)
			return rc;
		if (other == 0) {
			*why = "size is zero";
			return -EINVAL;
		}
		if (other > UINT64_MAX - start) {
			*why = "range overflows the address space";
			return -ERANGE;
		}
		other += start;
		range->form = RANGE_SIZED;
	}
	return check_span(start, other, page_size, range, why);
}

static char *skip_blanks(char *s)
{
	while (*s == ' ' || *s == '\t')
		s++;
	return s;
}

static int expect_blank(char **p, const char **why)
{
	if (**p != ' ' && **p != '\t') {
		*why = "malformed maps line";
		return -EINVAL;
	}
	*p = skip_blanks(*p);
	return 0;
}

/*
 * "START-END PERMS OFFSET MAJOR:MINOR INODE [PATH]": every field bounded, and
 * the path taken as the rest of the line, spaces and " (deleted)" included.
 */
int parse_maps_line(char *line, struct maps_entry *entry, const char **why)
{
	const char *cp;
	char *p = line;
	uint64_t value;
	size_t i;

	cp = p;
	if (scan_hex(&cp, &entry->start, why) || *cp != '-')
		goto malformed;
	cp++;
	if (scan_hex(&cp, &entry->end, why) || entry->end < entry->start)
		goto malformed;
	p = (char *) cp;
	if (expect_blank(&p, why))
		return -EINVAL;

	for (i = 0; i < PERMS_LEN - 1; i++) {
		if (!p[i] || p[i] == ' ')
			goto malformed;
		entry->perms[i] = p[i];
	}
	entry->perms[i] = '\0';
	p += i;
	if (expect_blank(&p, why))
		return -EINVAL;

	cp = p;
	if (scan_hex(&cp, &entry->offset, why))
		goto malformed;
	p = (char *) cp;
	if (expect_blank(&p, why))
		return -EINVAL;

	cp = p;
	if (scan_hex(&cp, &value, why) || *cp != ':' || value > UINT32_MAX)
		goto malformed;
	entry->dev_major = (unsigned int) value;
	cp++;
	if (scan_hex(&cp, &value, why) || value > UINT32_MAX)
		goto malformed;
	entry->dev_minor = (unsigned int) value;
	p = (char *) cp;
	if (expect_blank(&p, why))
		return -EINVAL;

	cp = p;
	if (scan_decimal(&cp, &entry->inode, why))
		goto malformed;
	p = (char *) cp;
	if (*p && *p != ' ' && *p != '\t')
		goto malformed;

	entry->path = skip_blanks(p);
	return 0;
malformed:
	*why = "malformed maps line";
	return -EINVAL;
}

int parse_maps_input_line(const char *line, uint64_t page_size,
			  struct range *range, const char **why)
{
	struct maps_entry entry;
	const char *p = line, *token_end;
	char *token, *copy;
	int rc;

	while (*p == ' ' || *p == '\t')
		p++;
	if (!*p || *p == '\n')
		return -ENODATA;

	token_end = p + strcspn(p, " \t\n");
	token = strndup(p, (size_t) (token_end - p));
	if (!token)
		return -ENOMEM;
	rc = parse_range(token, page_size, range, why);
	if (rc == 0 && range->form != RANGE_SPAN) {
		*why = "expected START-END";
		rc = -EINVAL;
	}
	free(token);
	if (rc)
		return rc;

	while (*token_end == ' ' || *token_end == '\t')
		token_end++;
	if (!*token_end || *token_end == '\n')
		return 0;

	/* more than START-END: then it has to be a whole maps line */
	copy = strdup(p);
	if (!copy)
		return -ENOMEM;
	copy[strcspn(copy, "\n")] = '\0';
	rc = parse_maps_line(copy, &entry, why);
	free(copy);
	return rc;
}

const struct selector_term_info selector_terms[] = {
	{ "all",       SEL_ALL,      "every mapping" },
	{ "anon",      SEL_ANON,     "no backing file: anonymous, [heap], [stack], [anon:NAME]" },
	{ "file",      SEL_FILE,     "backed by a file, deleted ones included" },
	{ "heap",      SEL_HEAP,     "the [heap]" },
	{ "stack",     SEL_STACK,    "the [stack]" },
	{ "private",   SEL_PRIVATE,  "private (copy-on-write) mappings" },
	{ "shared",    SEL_SHARED,   "shared mappings" },
	{ "path=",     SEL_PATH,     "pathname matches a glob, e.g. path='*libc*'" },
	{ "perms=",    SEL_PERMS,    "permissions match a glob, e.g. perms='rw?p'" },
	{ "min-size=", SEL_MIN_SIZE, "at least SIZE bytes" },
	{ "max-size=", SEL_MAX_SIZE, "at most SIZE bytes" },
};
const size_t selector_terms_count = sizeof(selector_terms) / sizeof(selector_terms[0]);

static int parse_selector_term(const char *word, size_t len,
			       struct selector_term *term, const char **why)
{
	size_t i;

	for (i = 0; i < selector_terms_count; i++) {
		const struct selector_term_info *info = &selector_terms[i];
		size_t name_len = strlen(info->name);
		bool takes_value = info->name[name_len - 1] == '=';
		char *value;
		int rc;

		if (takes_value ? len < name_len || strncasecmp(word, info->name, name_len) != 0
				: len != name_len || strncasecmp(word, info->name, len) != 0)
			continue;

		term->kind = info->kind;
		term->pattern = NULL;
		term->size = 0;
		if (!takes_value)
			return 0;
		if (len == name_len) {
			*why = "selector term needs a value";
			return -EINVAL;
		}
		value = strndup(word + name_len, len - name_len);
		if (!value)
			return -ENOMEM;
		if (info->kind == SEL_PATH || info->kind == SEL_PERMS) {
			term->pattern = value;
			return 0;
		}
		rc = parse_size(value, &term->size, why);
		free(value);
		return rc;
	}
	*why = "unknown selector term";
	return -EINVAL;
}

int parse_selector(const char *text, struct selector *sel,
		   const char **why, char **bad_term)
{
	const char *p = text;
	int rc = 0;

	memset(sel, 0, sizeof(*sel));
	if (bad_term)
		*bad_term = NULL;
	sel->text = strdup(text);
	if (!sel->text)
		return -ENOMEM;

	do {
		size_t len = strcspn(p, ",");
		struct selector_term *terms;

		if (len == 0) {
			*why = "empty selector term";
			rc = -EINVAL;
			goto fail;
		}
		terms = realloc(sel->terms, (sel->nterms + 1) * sizeof(*terms));
		if (!terms) {
			rc = -ENOMEM;
			goto fail;
		}
		sel->terms = terms;
		rc = parse_selector_term(p, len, &sel->terms[sel->nterms], why);
		if (rc) {
			if (bad_term)
				*bad_term = strndup(p, len);
			goto fail;
		}
		sel->nterms++;
		p += len;
	} while (*p++ == ',');
	return 0;
fail:
	free_selector(sel);
	return rc;
}

void free_selector(struct selector *sel)
{
	size_t i;

	for (i = 0; i < sel->nterms; i++)
		free(sel->terms[i].pattern);
	free(sel->terms);
	free(sel->text);
	memset(sel, 0, sizeof(*sel));
}

static bool is_stack_path(const char *path)
{
	return strcmp(path, "[stack]") == 0 || strncmp(path, "[stack:", 7) == 0;
}

bool is_special_mapping(const struct maps_entry *entry)
{
	return entry->path[0] == '[' && (strcmp(entry->path, "[vvar]") == 0
	    || strcmp(entry->path, "[vvar_vclock]") == 0
	    || strcmp(entry->path, "[vsyscall]") == 0);
}

bool is_anon_mapping(const struct maps_entry *entry)
{
	const char *path = entry->path;

	if (entry->inode != 0)
		return false;
	return !*path || strcmp(path, "[heap]") == 0 || is_stack_path(path)
	    || strncmp(path, "[anon:", 6) == 0;
}

bool is_file_mapping(const struct maps_entry *entry)
{
	return entry->inode != 0 || entry->path[0] == '/';
}

static bool term_matches(const struct selector_term *term,
			 const struct maps_entry *entry)
{
	uint64_t size = entry->end - entry->start;

	switch (term->kind) {
	case SEL_ALL:
		return true;
	case SEL_ANON:
		return is_anon_mapping(entry);
	case SEL_FILE:
		return is_file_mapping(entry);
	case SEL_HEAP:
		return strcmp(entry->path, "[heap]") == 0;
	case SEL_STACK:
		return is_stack_path(entry->path);
	case SEL_PRIVATE:
		return entry->perms[3] == 'p';
	case SEL_SHARED:
		return entry->perms[3] == 's';
	case SEL_PATH:
		return fnmatch(term->pattern, entry->path, 0) == 0;
	case SEL_PERMS:
		return fnmatch(term->pattern, entry->perms, 0) == 0;
	case SEL_MIN_SIZE:
		return size >= term->size;
	case SEL_MAX_SIZE:
		return size <= term->size;
	}
	return false;
}

bool selector_matches(const struct selector *sel, const struct maps_entry *entry)
{
	size_t i;

	for (i = 0; i < sel->nterms; i++)
		if (!term_matches(&sel->terms[i], entry))
			return false;
	return true;
}
