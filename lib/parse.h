/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Parsers for what pmadvise reads from its users and from /proc: sizes,
 * addresses, ranges, /proc/PID/maps lines and selector expressions.
 *
 * Nothing here does I/O or keeps state, so the fuzz harnesses can call the
 * very functions the program uses.  Every parser returns 0 on success or a
 * negative errno, and on failure sets *why to a static explanation for the
 * user ("address is not page-aligned", ...).
 */
#ifndef PMADVISE_PARSE_H
#define PMADVISE_PARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* 4-letter permissions ("rw-p") plus NUL */
#define PERMS_LEN 5

/* One line of /proc/PID/maps; path points into the parsed line. */
struct maps_entry {
	uint64_t start;
	uint64_t end;
	uint64_t offset;
	uint64_t inode;
	unsigned int dev_major;
	unsigned int dev_minor;
	char perms[PERMS_LEN];
	const char *path;		/* "" for an unnamed mapping */
};

enum range_form {
	RANGE_SPAN,			/* START-END, END exclusive */
	RANGE_SIZED,			/* START+SIZE */
	RANGE_MAPPING			/* ADDR: the mapping that contains it */
};

struct range {
	uint64_t start;
	uint64_t end;			/* exclusive; start + 1 for RANGE_MAPPING */
	enum range_form form;
};

/* Highest user address any supported architecture hands out (57-bit VA). */
#define USER_ADDRESS_LIMIT	(UINT64_C(1) << 57)

extern int parse_size(const char *str, uint64_t *result, const char **why);

/* The human form sizes are printed in: "4K", "1.5M" (base 1024, one decimal). */
#define HUMAN_SIZE_LEN 24
extern void size_to_human(uint64_t bytes, char buf[HUMAN_SIZE_LEN]);
/* Decimal digits of value and a NUL into buf (21 bytes at most); returns their count. */
extern size_t format_decimal(uint64_t value, char *buf);
extern int parse_address(const char *str, uint64_t *result, const char **why);
extern int parse_range(const char *str, uint64_t page_size,
		       struct range *range, const char **why);

/*
 * A line of /proc/PID/maps.  The line is modified in place (the path is
 * terminated), so it must be writable and NUL-terminated without its '\n'.
 */
extern int parse_maps_line(char *line, struct maps_entry *entry,
			   const char **why);

/*
 * A line of --maps input: a /proc/PID/maps line or a bare START-END.
 * Blank lines give -ENODATA, which callers skip.
 */
extern int parse_maps_input_line(const char *line, uint64_t page_size,
				 struct range *range, const char **why);

/* Selector expressions: comma-separated terms that must all hold. */
enum selector_kind {
	SEL_ALL,
	SEL_ANON,
	SEL_FILE,
	SEL_HEAP,
	SEL_STACK,
	SEL_PRIVATE,
	SEL_SHARED,
	SEL_PATH,
	SEL_PERMS,
	SEL_MIN_SIZE,
	SEL_MAX_SIZE
};

struct selector_term {
	enum selector_kind kind;
	char *pattern;			/* path= and perms= */
	uint64_t size;			/* min-size= and max-size= */
};

struct selector {
	struct selector_term *terms;
	size_t nterms;
	char *text;			/* as the user wrote it, for messages */
};

struct selector_term_info {
	const char *name;		/* "anon", "path=" ... */
	enum selector_kind kind;
	const char *help;
};

extern const struct selector_term_info selector_terms[];
extern const size_t selector_terms_count;

/* On failure *bad_term (when not NULL) gets a copy of the offending term. */
extern int parse_selector(const char *text, struct selector *sel,
			  const char **why, char **bad_term);
extern void free_selector(struct selector *sel);
extern bool selector_matches(const struct selector *sel,
			     const struct maps_entry *entry);

/* Mappings of the kernel's own that no selection includes. */
extern bool is_special_mapping(const struct maps_entry *entry);
extern bool is_anon_mapping(const struct maps_entry *entry);
extern bool is_file_mapping(const struct maps_entry *entry);

#endif /* PMADVISE_PARSE_H */
