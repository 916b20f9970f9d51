/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * pmadvise - give memory-management advice to another process
 *
 * Opens each target race-free through a pidfd, picks address ranges from
 * the command line, --maps input and selectors over /proc/PID/maps, advises
 * them with batched process_madvise(2) calls and prints one row per piece.
 */
#ifdef HAVE_CONFIG_H
# include "config.h"
#endif

#include <ctype.h>
#include <err.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/uio.h>
#ifdef HAVE_SYS_PIDFD_H
# include <sys/pidfd.h>
#endif

#include <libsmartcols.h>

#include "lib/inject.h"
#include "lib/pmadvise.h"
#include "lib/escape.h"

#ifndef PACKAGE_VERSION
# define PACKAGE_VERSION "unknown"
#endif

/*
 * Advice
 */
static const struct advice_info advices[] = {
	{ "cold",        MADV_COLD,        "5.10", "deactivate: first in line for reclaim" },
	{ "pageout",     MADV_PAGEOUT,     "5.10", "reclaim now: drop file pages, swap out anonymous ones" },
	{ "willneed",    MADV_WILLNEED,    "5.15", "read ahead, swap in" },
	{ "collapse",    MADV_COLLAPSE,    "6.1",  "collapse into transparent huge pages now" },
	{ "mergeable",   MADV_MERGEABLE,   NULL,   "let KSM merge identical pages" },
	{ "unmergeable", MADV_UNMERGEABLE, NULL,   "undo mergeable" },
};

/* Advice that can lose data is never offered, not even as a number. */
static const int destructive_advice[] = {
	4,	/* MADV_DONTNEED */
	8,	/* MADV_FREE */
	9,	/* MADV_REMOVE */
	18,	/* MADV_WIPEONFORK */
	24,	/* MADV_DONTNEED_LOCKED */
	100,	/* MADV_HWPOISON */
	101,	/* MADV_SOFT_OFFLINE */
	102,	/* MADV_GUARD_INSTALL */
};

/*
 * Output columns
 */
enum column_type { TYPE_STRING, TYPE_NUMBER, TYPE_SIZE, TYPE_DELTA };

struct colinfo {
	const char *name;
	double whint;
	int flags;
	enum column_type type;
	unsigned int needs;
	const char *help;
};

static const struct colinfo infos[NCOLUMNS] = {
	[COL_PID]     = { "PID",     5, SCOLS_FL_RIGHT, TYPE_NUMBER, 0, "process ID of the target" },
	[COL_COMM]    = { "COMM",   15, 0,              TYPE_STRING, 0, "command name of the target" },
	[COL_START]   = { "START",  12, SCOLS_FL_RIGHT, TYPE_STRING, 0, "start address of the piece (hexadecimal)" },
	[COL_END]     = { "END",    12, SCOLS_FL_RIGHT, TYPE_STRING, 0, "end address of the piece, exclusive (hexadecimal)" },
	[COL_SIZE]    = { "SIZE",    5, SCOLS_FL_RIGHT, TYPE_SIZE,   0, "size of the piece" },
	[COL_PERMS]   = { "PERMS",   4, 0,              TYPE_STRING, 0, "permissions of the mapping, as in /proc/PID/maps" },
	[COL_OFFSET]  = { "OFFSET",  8, SCOLS_FL_RIGHT, TYPE_STRING, 0, "file offset of the piece (hexadecimal)" },
	[COL_DEVICE]  = { "DEVICE",  5, 0,              TYPE_STRING, 0, "device of the mapped file (major:minor)" },
	[COL_INODE]   = { "INODE",   5, SCOLS_FL_RIGHT, TYPE_NUMBER, 0, "inode of the mapped file" },
	[COL_PATH]    = { "PATH",   0.3, SCOLS_FL_TRUNC, TYPE_STRING, 0, "mapped file or [name] of the mapping" },
	[COL_ADVICE]  = { "ADVICE",  8, 0,              TYPE_STRING, 0, "advice given" },
	[COL_ADVISED] = { "ADVISED", 5, SCOLS_FL_RIGHT, TYPE_SIZE,   0, "bytes the kernel reports advised" },
	[COL_STATUS]  = { "STATUS",  7, 0,              TYPE_STRING, 0, "ok, failed, unmapped, skipped, not-run, partial or dry-run" },
	[COL_ERRNO]   = { "ERRNO",   6, 0,              TYPE_STRING, 0, "error the kernel returned" },
	[COL_REASON]  = { "REASON", 0.3, SCOLS_FL_TRUNC, TYPE_STRING, 0, "why the piece was not advised" },
	[COL_RSS]     = { "RSS",     5, SCOLS_FL_RIGHT, TYPE_SIZE,   NEED_PAGES,
			  "resident bytes of the piece before the advice" },
	[COL_RSS_AFTER] = { "RSS-AFTER", 5, SCOLS_FL_RIGHT, TYPE_SIZE, NEED_PAGES | NEED_AFTER,
			  "resident bytes of the piece after the advice" },
	[COL_RSS_DELTA] = { "RSS-DELTA", 5, SCOLS_FL_RIGHT, TYPE_DELTA, NEED_PAGES | NEED_AFTER,
			  "change of resident bytes (negative: freed)" },
	[COL_SWAP]    = { "SWAP",    5, SCOLS_FL_RIGHT, TYPE_SIZE,   NEED_PAGES,
			  "swapped-out bytes of the piece before the advice" },
	[COL_SWAP_AFTER] = { "SWAP-AFTER", 5, SCOLS_FL_RIGHT, TYPE_SIZE, NEED_PAGES | NEED_AFTER,
			  "swapped-out bytes of the piece after the advice" },
	[COL_HUGE]    = { "HUGE",    5, SCOLS_FL_RIGHT, TYPE_SIZE,   NEED_PAGES,
			  "bytes mapped by transparent huge pages before the advice" },
	[COL_HUGE_AFTER] = { "HUGE-AFTER", 5, SCOLS_FL_RIGHT, TYPE_SIZE, NEED_PAGES | NEED_AFTER,
			  "bytes mapped by transparent huge pages after the advice" },
	[COL_REFERENCED] = { "REFERENCED", 5, SCOLS_FL_RIGHT, TYPE_SIZE, NEED_SMAPS,
			  "smaps Referenced of a whole-mapping row before the advice" },
	[COL_REFERENCED_AFTER] = { "REFERENCED-AFTER", 5, SCOLS_FL_RIGHT, TYPE_SIZE, NEED_SMAPS | NEED_AFTER,
			  "smaps Referenced of a whole-mapping row after the advice" },
	[COL_KSM]     = { "KSM",     5, SCOLS_FL_RIGHT, TYPE_SIZE,   NEED_SMAPS | NEED_AFTER,
			  "smaps KSM (bytes merged) of a whole-mapping row, after the advice" },
	[COL_RULE]    = { "RULE",    4, SCOLS_FL_RIGHT, TYPE_NUMBER, 0,
			  "the --rule that chose the row (1-based)" },
};

static const int default_columns[] = {
	COL_START, COL_END, COL_SIZE, COL_PERMS, COL_ADVISED, COL_STATUS, COL_PATH
};

/*
 * Pieces and targets
 */
static const char *const status_names[] = {
	[ST_PENDING]  = "pending",
	[ST_OK]       = "ok",
	[ST_FAILED]   = "failed",
	[ST_UNMAPPED] = "unmapped",
	[ST_SKIPPED]  = "skipped",
	[ST_NOT_RUN]  = "not-run",
	[ST_PARTIAL]  = "partial",
	[ST_DRY_RUN]  = "dry-run",
};

/*
 * Small helpers
 */
static char *human_size(uint64_t bytes)
{
	char buf[HUMAN_SIZE_LEN];

	size_to_human(bytes, buf);
	return xstrdup(buf);
}

static void close_stdout(void)
{
	bool failed = ferror(stdout);

	errno = 0;
	if (fclose(stdout) != 0)
		failed = true;
	/*
	 * A reader that went away (| head -1) is not worth a word, and the
	 * advice was given all the same: keep the exit status.
	 */
	if (failed && errno != EPIPE) {
		if (errno)
			warn("write error");
		else
			warnx("write error");
		_exit(EXIT_FAILURE);
	}
}

/*
 * Parsing the command line
 */
static bool is_advice_name(const char *arg)
{
	size_t i;

	if (strncasecmp(arg, "MADV_", 5) == 0)
		arg += 5;
	for (i = 0; i < sizeof(advices) / sizeof(advices[0]); i++)
		if (strcasecmp(arg, advices[i].name) == 0)
			return true;
	return false;
}

/* `where` names the argument for messages: "" or " in --rule '...'". */
static void parse_advice(struct advice *advice, const char *arg, const char *where)
{
	const char *name = arg;
	size_t i;

	if (strncasecmp(name, "MADV_", 5) == 0)
		name += 5;
	for (i = 0; i < sizeof(advices) / sizeof(advices[0]); i++) {
		if (strcasecmp(name, advices[i].name) == 0) {
			advice->info = &advices[i];
			advice->value = advices[i].value;
			advice->name = advices[i].name;
			return;
		}
	}

	if (isdigit((unsigned char) *arg)) {
		char *end;
		long value;

		errno = 0;
		value = strtol(arg, &end, 10);
		if (errno || *end || value < 0 || value > INT_MAX)
			errx(EXIT_FAILURE, "invalid advice number '%s'%s", esc(arg), where);
		for (i = 0; i < sizeof(destructive_advice) / sizeof(destructive_advice[0]); i++)
			if (destructive_advice[i] == value)
				errx(EXIT_FAILURE, "advice %ld%s can lose data and is never given",
				     value, where);
		for (i = 0; i < sizeof(advices) / sizeof(advices[0]); i++) {
			if (advices[i].value == value) {
				advice->info = &advices[i];
				advice->name = advices[i].name;
				advice->value = (int) value;
				return;
			}
		}
		advice->info = NULL;
		advice->value = (int) value;
		advice->name = arg;
		return;
	}

	if (strcasecmp(name, "dontneed") == 0 || strcasecmp(name, "free") == 0
	    || strcasecmp(name, "remove") == 0 || strcasecmp(name, "wipeonfork") == 0
	    || strcasecmp(name, "dontneed_locked") == 0)
		errx(EXIT_FAILURE, "advice '%s'%s can lose data and is never given", esc(arg), where);
	errx(EXIT_FAILURE, "unknown advice '%s'%s (known: cold, pageout, willneed, "
	     "collapse, mergeable, unmergeable)", esc(arg), where);
}

/*
 * The text splits at its last '=', so that "path=*x=cold" and
 * "perms=r--p=cold" work.  A SELECTOR that reads as a RANGE is one.
 */
static void add_rule(struct pmadvise *ctl, const char *text, uint64_t page_size)
{
	const char *eq = strrchr(text, '='), *why = NULL;
	char *selector, *where, *bad = NULL;
	struct rule *rule;

	if (!eq || eq == text || !eq[1])
		errx(EXIT_FAILURE, "invalid --rule '%s': expected SELECTOR=ADVICE", esc(text));
	ctl->rules = xreallocarray(ctl->rules, ctl->nrules + 1, sizeof(*ctl->rules));
	rule = &ctl->rules[ctl->nrules++];
	memset(rule, 0, sizeof(*rule));
	rule->text = xstrdup(text);
	where = xasprintf(" in --rule '%s'", esc(text));
	parse_advice(&rule->advice, eq + 1, where);
	free(where);

	selector = strndup(text, (size_t) (eq - text));
	if (!selector)
		err(EXIT_FAILURE, "cannot allocate memory");
	if (parse_range(selector, page_size, &rule->range, &why) == 0) {
		rule->is_range = true;
	} else if (parse_selector(selector, &rule->sel, &why, &bad) != 0) {
		if (bad)
			errx(EXIT_FAILURE, "invalid --rule '%s': '%s' is neither a range nor a "
			     "selector: %s '%s'", esc(text), esc(selector), why, esc(bad));
		errx(EXIT_FAILURE, "invalid --rule '%s': '%s' is neither a range nor a "
		     "selector: %s", esc(text), esc(selector), why);
	}
	free(selector);
}

static int column_name_to_id(const char *name, size_t len)
{
	size_t i;

	for (i = 0; i < NCOLUMNS; i++) {
		if (strlen(infos[i].name) == len && strncasecmp(infos[i].name, name, len) == 0)
			return (int) i;
	}
	return -1;
}

static bool has_column(const struct pmadvise *ctl, int id)
{
	size_t i;

	for (i = 0; i < ctl->ncolumns; i++)
		if (ctl->columns[i] == id)
			return true;
	return false;
}

static void add_column(struct pmadvise *ctl, int id)
{
	if (ctl->ncolumns >= sizeof(ctl->columns) / sizeof(ctl->columns[0]))
		errx(EXIT_FAILURE, "too many columns in --output");
	ctl->columns[ctl->ncolumns++] = id;
}

static void parse_columns(struct pmadvise *ctl, const char *list)
{
	const char *p = list;

	if (*p == '+')
		p++;
	else
		ctl->ncolumns = 0;
	do {
		size_t len = strcspn(p, ",");
		int id = column_name_to_id(p, len);

		if (id < 0)
			errx(EXIT_FAILURE, "unknown column '%s' in --output (see --list-columns)",
			     esc_mem(p, len));
		add_column(ctl, id);
		p += len;
	} while (*p++ == ',');
}

static void add_range(struct pmadvise *ctl, const struct range *range)
{
	if (ctl->nranges % 64 == 0)
		ctl->ranges = xreallocarray(ctl->ranges, ctl->nranges + 64, sizeof(*ctl->ranges));
	ctl->ranges[ctl->nranges++] = *range;
}

static void parse_range_arg(struct pmadvise *ctl, const char *arg)
{
	struct range range;
	const char *why = NULL;

	if (parse_range(arg, ctl->page_size, &range, &why) != 0)
		errx(EXIT_FAILURE, "invalid range '%s': %s", esc(arg), why);
	add_range(ctl, &range);
}

static void add_selector(struct selector **list, size_t *n, const char *text,
			 const char *option)
{
	struct selector sel;
	const char *why = NULL;
	char *bad = NULL;

	if (parse_selector(text, &sel, &why, &bad) != 0) {
		if (bad)
			errx(EXIT_FAILURE, "invalid %s '%s': %s '%s'", option, esc(text), why,
			     esc(bad));
		errx(EXIT_FAILURE, "invalid %s '%s': %s", option, esc(text), why);
	}
	*list = xreallocarray(*list, *n + 1, sizeof(**list));
	(*list)[(*n)++] = sel;
}

static void read_maps_input(struct pmadvise *ctl, const char *file)
{
	FILE *f = strcmp(file, "-") == 0 ? stdin : fopen(file, "r");
	const char *name = f == stdin ? "standard input" : file;
	size_t alloc = 0, lineno = 0;
	char *line = NULL;
	ssize_t len;

	if (!f)
		err(EXIT_FAILURE, "cannot open --maps file %s", esc(file));
	while ((len = getline(&line, &alloc, f)) >= 0) {
		struct range range;
		const char *why = NULL;
		int rc;

		lineno++;
		if (memchr(line, '\0', (size_t) len))
			errx(EXIT_FAILURE, "--maps %s: line %zu: contains a NUL byte", esc(name),
			     lineno);
		/* a file written on Windows: the \r of its CRLF ends is no part of the line */
		if (len >= 2 && line[len - 2] == '\r' && line[len - 1] == '\n')
			memcpy(&line[len - 2], "\n", 2);
		else if (len >= 1 && line[len - 1] == '\r')
			line[len - 1] = '\0';
		rc = parse_maps_input_line(line, ctl->page_size, &range, &why);
		if (rc == -ENODATA)
			continue;
		if (rc == -ENOMEM)
			errx(EXIT_FAILURE, "cannot allocate memory");
		if (rc)
			errx(EXIT_FAILURE, "--maps %s: line %zu: %s", esc(name), lineno, why);
		add_range(ctl, &range);
	}
	if (ferror(f))
		err(EXIT_FAILURE, "cannot read --maps %s", esc(name));
	free(line);
	if (f != stdin)
		fclose(f);
}

/*
 * Measurement: only what a column or --summary asks for is read.
 */
enum {
	MEASURED_PAGES		= 1 << 0,
	MEASURED_PAGES_AFTER	= 1 << 1,
	MEASURED_SMAPS		= 1 << 2,
	MEASURED_SMAPS_AFTER	= 1 << 3
};

/* A piece's measurements; all zero where nothing was measured. */
static const struct piece_measure *measure_of(const struct target *t, const struct piece *pc)
{
	static const struct piece_measure none;
	size_t i = (size_t) (pc - t->pieces);

	return i < t->nmeasures ? &t->measures[i] : &none;
}

static int span_cmp(const void *a, const void *b)
{
	const struct span *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

/* The pieces' address ranges, sorted, overlaps and neighbours joined. */
static struct span *piece_spans(const struct target *t, size_t *count)
{
	struct span *spans = xreallocarray(NULL, t->npieces, sizeof(*spans));
	size_t n = 0, i, out = 0;
	bool sorted = true;

	for (i = 0; i < t->npieces; i++) {
		if (!t->pieces[i].mapping)
			continue;
		if (n && t->pieces[i].start < spans[n - 1].start)
			sorted = false;
		spans[n++] = (struct span) { t->pieces[i].start, t->pieces[i].end };
	}
	/* pieces are in address order but for unordered RANGEs: qsort only then */
	if (!sorted)
		qsort(spans, n, sizeof(*spans), span_cmp);
	for (i = 0; i < n; i++) {
		if (out && spans[i].start <= spans[out - 1].end) {
			if (spans[i].end > spans[out - 1].end)
				spans[out - 1].end = spans[i].end;
		} else {
			spans[out++] = spans[i];
		}
	}
	*count = out;
	return spans;
}

static void measure_pages(struct pmadvise *ctl, struct target *t, bool after)
{
	struct span *spans;
	size_t nspans, i;
	int rc;

	if (!t->scan_open) {
		rc = page_scan_open(&t->scan, t->procfd, ctl->page_size);
		if (rc) {
			warnx("PID %d: cannot open /proc/%d/pagemap: %s",
			      (int) t->pid, (int) t->pid, strerror(-rc));
			return;
		}
		t->scan_open = true;
	}
	spans = piece_spans(t, &nspans);
	rc = page_scan(&t->scan, spans, nspans);
	free(spans);
	if (rc) {
		warnx("PID %d: cannot measure residency: %s", (int) t->pid, strerror(-rc));
		return;
	}
	if (t->scan.pfns_hidden && !t->huge_unknown) {
		static bool said;

		t->huge_unknown = true;
		if (!said && (has_column(ctl, COL_HUGE) || has_column(ctl, COL_HUGE_AFTER)))
			warnx("HUGE left empty: without PAGEMAP_SCAN (Linux 6.7), huge pages "
			      "can be seen only with CAP_SYS_ADMIN");
		said = true;
	}
	for (i = 0; i < t->nmeasures; i++) {
		struct piece *pc = &t->pieces[i];
		struct piece_measure *pm = &t->measures[i];

		if (!pc->mapping)
			continue;
		page_scan_sum(&t->scan, pc->start, pc->end, after ? &pm->after : &pm->before);
		pc->measured |= after ? MEASURED_PAGES_AFTER : MEASURED_PAGES;
	}
}

static void measure_smaps(struct target *t, bool after)
{
	struct smaps_fields *fields = NULL;
	size_t nfields = 0, i;
	int rc;

	rc = read_smaps_fields(t->procfd, &fields, &nfields);
	if (rc) {
		warnx("PID %d: cannot read /proc/%d/smaps: %s",
		      (int) t->pid, (int) t->pid, strerror(-rc));
		return;
	}
	for (i = 0; i < t->nmeasures; i++) {
		struct piece *pc = &t->pieces[i];
		struct piece_measure *pm = &t->measures[i];
		const struct smaps_fields *f;

		/* smaps speaks of whole mappings only */
		if (!pc->mapping || pc->start != pc->mapping->start || pc->end != pc->mapping->end)
			continue;
		f = find_smaps_fields(fields, nfields, pc->start);
		if (!f || f->end != pc->end)
			continue;
		if (after)
			pm->referenced_after = f->referenced;
		else
			pm->referenced = f->referenced;
		pm->ksm = f->ksm;
		pm->has_ksm = f->has_ksm;
		pc->measured |= after ? MEASURED_SMAPS_AFTER : MEASURED_SMAPS;
	}
	free(fields);
}

static void measure_target(struct pmadvise *ctl, struct target *t, bool after)
{
	if (after && (ctl->dry_run || !(ctl->needs & NEED_AFTER)))
		return;
	if (!t->measures && (ctl->needs & (NEED_PAGES | NEED_SMAPS)) && t->npieces) {
		t->measures = xreallocarray(NULL, t->npieces, sizeof(*t->measures));
		memset(t->measures, 0, t->npieces * sizeof(*t->measures));
		t->nmeasures = t->npieces;
	}
	if (ctl->needs & NEED_PAGES)
		measure_pages(ctl, t, after);
	if (ctl->needs & NEED_SMAPS)
		measure_smaps(t, after);
	if (after && t->scan_open) {
		page_scan_close(&t->scan);
		t->scan_open = false;
	}
}

/*
 * Output
 */
static char *format_size(const struct pmadvise *ctl, uint64_t bytes)
{
	return ctl->bytes ? xasprintf("%" PRIu64, bytes) : human_size(bytes);
}

/*
 * Table cells are formatted into the caller's buffer, or are strings that
 * exist already: libsmartcols takes its own copy of each, and formatting
 * costs no allocation of ours (on 60 000 rows, vasprintf was 6% of the run).
 */
#define CELL_LEN	64

static const char *hex_text(uint64_t value, char *buf)
{
	static const char digits[] = "0123456789abcdef";
	char reversed[16];
	size_t n = 0, i;

	do {
		reversed[n++] = digits[value & 0xf];
		value >>= 4;
	} while (value);
	for (i = 0; i < n; i++)
		buf[i] = reversed[n - 1 - i];
	buf[n] = '\0';
	return buf;
}

static const char *decimal_text(uint64_t value, char *buf)
{
	format_decimal(value, buf);
	return buf;
}

static const char *size_text(const struct pmadvise *ctl, uint64_t bytes, char *buf)
{
	if (ctl->bytes)
		return decimal_text(bytes, buf);
	size_to_human(bytes, buf);
	return buf;
}

/* Empty where the row was not measured (a hole, or a part of a mapping for smaps). */
static const char *measured_size(const struct pmadvise *ctl, const struct piece *pc,
				 unsigned int which, uint64_t bytes, char *buf)
{
	return pc->measured & which ? size_text(ctl, bytes, buf) : NULL;
}

static const char *measured_delta(const struct pmadvise *ctl, const struct piece *pc,
				  uint64_t before, uint64_t after, char *buf)
{
	const unsigned int both = MEASURED_PAGES | MEASURED_PAGES_AFTER;
	uint64_t diff = after >= before ? after - before : before - after;

	if ((pc->measured & both) != both)
		return NULL;
	if (diff == 0)
		return "0";
	/* a JSON number takes no '+' */
	if (ctl->bytes && after >= before)
		return size_text(ctl, diff, buf);
	buf[0] = after >= before ? '+' : '-';
	size_text(ctl, diff, buf + 1);
	return buf;
}

static const char *cell_text(const struct pmadvise *ctl, const struct target *t,
			     const struct piece *pc, int col, char *buf)
{
	const struct maps_entry *m = pc->mapping;
	const struct piece_measure *pm;

	/* the row of --inject --select all: one prctl for the whole process, no addresses */
	if (pc->whole_process && col == COL_ADVICE) {
		snprintf(buf, CELL_LEN, "%s (prctl)", pc->advice->name);
		return buf;
	}
	if (pc->whole_process && col != COL_PID && col != COL_COMM && col != COL_STATUS
	    && col != COL_ERRNO && col != COL_REASON)
		return NULL;
	pm = measure_of(t, pc);
	switch (col) {
	case COL_PID:
		return decimal_text((uint64_t) t->pid, buf);
	case COL_COMM:
		return t->comm;
	case COL_START:
		return hex_text(pc->start, buf);
	case COL_END:
		return hex_text(pc->end, buf);
	case COL_SIZE:
		return size_text(ctl, pc->end - pc->start, buf);
	case COL_PERMS:
		return m ? m->perms : NULL;
	case COL_OFFSET:
		return m ? hex_text(m->offset + (pc->start - m->start), buf) : NULL;
	case COL_DEVICE:
		if (!m)
			return NULL;
		snprintf(buf, CELL_LEN, "%02x:%02x", m->dev_major, m->dev_minor);
		return buf;
	case COL_INODE:
		return m ? decimal_text(m->inode, buf) : NULL;
	case COL_PATH:
		return m && *m->path ? m->path : NULL;
	case COL_ADVICE:
		return pc->advice ? pc->advice->name : NULL;
	case COL_RULE:
		return pc->rule ? decimal_text(pc->rule, buf) : NULL;
	case COL_ADVISED:
		return size_text(ctl, pc->advised, buf);
	case COL_STATUS:
		return status_names[pc->status];
	case COL_ERRNO:
		if (!pc->error)
			return NULL;
		return strerrorname_np(pc->error) ? strerrorname_np(pc->error) : "?";
	case COL_REASON:
		return pc->reason;
	case COL_RSS:
		return measured_size(ctl, pc, MEASURED_PAGES, pm->before.rss, buf);
	case COL_RSS_AFTER:
		return measured_size(ctl, pc, MEASURED_PAGES_AFTER, pm->after.rss, buf);
	case COL_RSS_DELTA:
		return measured_delta(ctl, pc, pm->before.rss, pm->after.rss, buf);
	case COL_SWAP:
		return measured_size(ctl, pc, MEASURED_PAGES, pm->before.swap, buf);
	case COL_SWAP_AFTER:
		return measured_size(ctl, pc, MEASURED_PAGES_AFTER, pm->after.swap, buf);
	case COL_HUGE:
		return t->huge_unknown ? NULL
			: measured_size(ctl, pc, MEASURED_PAGES, pm->before.huge, buf);
	case COL_HUGE_AFTER:
		return t->huge_unknown ? NULL
			: measured_size(ctl, pc, MEASURED_PAGES_AFTER, pm->after.huge, buf);
	case COL_REFERENCED:
		return measured_size(ctl, pc, MEASURED_SMAPS, pm->referenced, buf);
	case COL_REFERENCED_AFTER:
		return measured_size(ctl, pc, MEASURED_SMAPS_AFTER, pm->referenced_after, buf);
	case COL_KSM:
		if (!pm->has_ksm)
			return NULL;
		return measured_size(ctl, pc, MEASURED_SMAPS | MEASURED_SMAPS_AFTER, pm->ksm, buf);
	}
	return NULL;
}

static int json_type_of(const struct pmadvise *ctl, int col)
{
	switch (infos[col].type) {
	case TYPE_NUMBER:
		return SCOLS_JSON_NUMBER;
	case TYPE_SIZE:
	case TYPE_DELTA:
		return ctl->bytes ? SCOLS_JSON_NUMBER : SCOLS_JSON_STRING;
	default:
		return SCOLS_JSON_STRING;
	}
}

static struct libscols_table *new_table(const struct pmadvise *ctl, const char *name)
{
	struct libscols_table *tb = scols_new_table();

	if (!tb)
		err(EXIT_FAILURE, "cannot create the output table");
	scols_table_enable_json(tb, ctl->json);
	scols_table_enable_raw(tb, ctl->raw);
	scols_table_enable_noheadings(tb, ctl->noheadings);
	scols_table_set_name(tb, name);
	return tb;
}

/*
 * libsmartcols keeps every cell of a table in memory, about 100 bytes each:
 * 50 MiB for 60 000 rows with measurements, and memory that is touched for
 * the first time costs page faults.  A table that goes to a file or a pipe is
 * therefore printed TABLE_SLICE rows at a time, through the same lines, each
 * slice with the widths measured over all rows beforehand, so that the bytes
 * are those of one table.  On a terminal libsmartcols may narrow columns to
 * fit it, which needs the whole table; cells it would encode (anything but
 * printable ASCII, or a backslash) have width rules of their own; JSON is one
 * document: all three are printed as one table.
 */
#define TABLE_SLICE	1024

/* One table's column widths, as libsmartcols lays them out when the output is
 * not a terminal: the widest cell; the header's width where that is wider;
 * else an absolute width hint where the hint is wider than both.  False when
 * the rows cannot be printed in slices. */
static bool slice_widths(const struct pmadvise *ctl, size_t rows, size_t *widths)
{
	size_t i, j, k;

	if (ctl->json || rows <= TABLE_SLICE || isatty(STDOUT_FILENO))
		return false;
	if (ctl->raw)
		return true;		/* no padding: nothing to measure */
	for (i = 0; i < ctl->ntargets; i++) {
		const struct target *t = &ctl->targets[i];

		for (j = 0; j < t->npieces; j++) {
			for (k = 0; k < ctl->ncolumns; k++) {
				char buf[CELL_LEN];
				const char *text = cell_text(ctl, t, &t->pieces[j], ctl->columns[k], buf);
				const unsigned char *p;

				if (!text)
					continue;
				for (p = (const unsigned char *) text; *p; p++)
					if (*p < 0x20 || *p > 0x7e || *p == '\\')
						return false;
				if ((size_t) (p - (const unsigned char *) text) > widths[k])
					widths[k] = p - (const unsigned char *) text;
			}
		}
	}
	/* the header's width below that; an absolute hint above both */
	for (k = 0; k < ctl->ncolumns; k++) {
		const struct colinfo *ci = &infos[ctl->columns[k]];
		size_t header = strlen(ci->name);

		if (widths[k] < header)
			widths[k] = header;
		else if (ci->whint >= 1 && widths[k] < (size_t) ci->whint && header < (size_t) ci->whint)
			widths[k] = (size_t) ci->whint;
	}
	return true;
}

static void fill_line(const struct pmadvise *ctl, struct libscols_line *ln,
		      const struct target *t, const struct piece *pc)
{
	size_t k;

	for (k = 0; k < ctl->ncolumns; k++) {
		char buf[CELL_LEN];
		const char *text = cell_text(ctl, t, pc, ctl->columns[k], buf);

		if (scols_line_set_data(ln, k, text) != 0)
			err(EXIT_FAILURE, "cannot fill the table");
	}
}

static void print_table(const struct pmadvise *ctl, const char *json_extra)
{
	struct libscols_table *tb = new_table(ctl, "pmadvise");
	struct libscols_line **lines = NULL;
	size_t i, j, rows = 0, n = 0, *widths;
	bool sliced;

	for (i = 0; i < ctl->ntargets; i++)
		rows += ctl->targets[i].npieces;
	widths = xcalloc(ctl->ncolumns, sizeof(*widths));
	sliced = slice_widths(ctl, rows, widths);
	for (i = 0; i < ctl->ncolumns; i++) {
		const struct colinfo *ci = &infos[ctl->columns[i]];
		struct libscols_column *cl;

		if (sliced)
			/* a slice's column gets the hint's width whatever its own
			 * cells; below the header's width that takes a strict one */
			cl = scols_table_new_column(tb, ci->name, (double) widths[i],
					ci->flags | (strlen(ci->name) < widths[i] ? SCOLS_FL_STRICTWIDTH : 0));
		else
			cl = scols_table_new_column(tb, ci->name, ci->whint, ci->flags);
		if (!cl)
			err(EXIT_FAILURE, "cannot create a column");
		if (ctl->json)
			scols_column_set_json_type(cl, json_type_of(ctl, ctl->columns[i]));
	}
	if (sliced) {
		lines = xcalloc(TABLE_SLICE, sizeof(*lines));
		/* printable ASCII: libsmartcols' encoding would change nothing
		 * (raw output is not measured: it keeps the encoding) */
		scols_table_enable_noencoding(tb, !ctl->raw);
	}
	for (i = 0; i < ctl->ntargets; i++) {
		const struct target *t = &ctl->targets[i];

		for (j = 0; j < t->npieces; j++) {
			struct libscols_line *ln = NULL;

			if (sliced && n == TABLE_SLICE) {
				/* this slice out; the next one goes through the same lines */
				scols_print_table(tb);
				scols_table_enable_noheadings(tb, 1);
				n = 0;
			}
			if (sliced)
				ln = lines[n];
			if (!ln)
				ln = scols_table_new_line(tb, NULL);
			if (!ln)
				err(EXIT_FAILURE, "cannot create a table line");
			if (sliced)
				lines[n++] = ln;
			fill_line(ctl, ln, t, &t->pieces[j]);
		}
	}
	if (sliced) {
		/* the last slice may be shorter */
		for (i = n; i < TABLE_SLICE && lines[i]; i++)
			scols_table_remove_line(tb, lines[i]);
		free(lines);
	}
	free(widths);
	if (json_extra) {
		/* one more member after the table's array keeps the document valid */
		char *text = NULL, *end;

		if (scols_print_table_to_string(tb, &text) != 0 || !text)
			err(EXIT_FAILURE, "cannot print the table");
		end = strrchr(text, '}');
		if (!end)
			errx(EXIT_FAILURE, "unexpected JSON from libsmartcols");
		while (end > text && (end[-1] == '\n' || end[-1] == ' '))
			end--;
		printf("%.*s,\n   %s\n}\n", (int) (end - text), text, json_extra);
		free(text);
	} else if (!sliced || n) {
		scols_print_table(tb);
	}
	scols_unref_table(tb);
}

struct totals {
	size_t rows, ok, failed, skipped, not_run, dry_run;
	size_t exited;			/* not-run rows of a cgroup's process that exited */
	uint64_t advised;
	struct residency before, after;
	bool measured;
};

static void count_target(const struct target *t, struct totals *tt)
{
	size_t j;

	for (j = 0; j < t->npieces; j++) {
		const struct piece *pc = &t->pieces[j];
		const struct piece_measure *pm;

		tt->rows++;
		tt->advised += pc->advised;
		switch (pc->status) {
		case ST_OK:
			tt->ok++;
			break;
		case ST_SKIPPED:
			tt->skipped++;
			break;
		case ST_NOT_RUN:
		case ST_PENDING:
			tt->not_run++;
			if (t->gone)
				tt->exited++;
			break;
		case ST_DRY_RUN:
			tt->dry_run++;
			break;
		default:
			tt->failed++;
			break;
		}
		/* an exited process was not measured after: keep it out of RSS and swap */
		if (t->error == ESRCH)
			continue;
		pm = measure_of(t, pc);
		tt->before.rss += pm->before.rss;
		tt->before.swap += pm->before.swap;
		tt->after.rss += pm->after.rss;
		tt->after.swap += pm->after.swap;
	}
}

static void count_totals(const struct pmadvise *ctl, struct totals *tt)
{
	size_t i;

	memset(tt, 0, sizeof(*tt));
	tt->measured = ctl->needs & NEED_PAGES;
	for (i = 0; i < ctl->ntargets; i++)
		count_target(&ctl->targets[i], tt);
}

static void print_totals_line(const struct pmadvise *ctl, const char *label,
			      const struct totals *tt)
{
	char *advised = format_size(ctl, tt->advised);

	if (ctl->dry_run)
		fprintf(stderr, "%s: %zu rows: %zu selected, %zu unmapped",
			label, tt->rows, tt->dry_run, tt->rows - tt->dry_run);
	else
		fprintf(stderr, "%s: %zu rows: %zu ok, %zu failed, %zu skipped, %zu not-run; "
			"advised %s", label, tt->rows, tt->ok, tt->failed, tt->skipped,
			tt->not_run, advised);
	free(advised);
	if (tt->measured && ctl->dry_run) {
		char *a = format_size(ctl, tt->before.rss), *c = format_size(ctl, tt->before.swap);

		fprintf(stderr, "; RSS %s; swap %s", a, c);
		free(a);
		free(c);
	} else if (tt->measured) {
		char *a = format_size(ctl, tt->before.rss), *b = format_size(ctl, tt->after.rss);
		char *c = format_size(ctl, tt->before.swap), *d = format_size(ctl, tt->after.swap);

		fprintf(stderr, "; RSS %s -> %s; swap %s -> %s", a, b, c, d);
		free(a);
		free(b);
		free(c);
		free(d);
	}
	fputc('\n', stderr);
}

/* With several targets (or a cgroup), --summary has a line for each. */
static bool summary_per_target(const struct pmadvise *ctl)
{
	return ctl->ntargets > 1 || ctl->ncgroup_args;
}

/* Why a target has no rows, for its summary line; NULL when it has some. */
static const char *no_rows_reason(const struct target *t)
{
	if (t->npieces)
		return NULL;
	if (t->kernel_thread)
		return "a kernel thread: no user memory to advise";
	if (t->gone)
		return "exited before it was advised";
	if (t->none_selected)
		return "nothing selected";
	if (t->error == ECANCELED)
		return "not opened: stopped before its turn";
	return "not advised (see the message above)";
}

static void print_summary(const struct pmadvise *ctl)
{
	struct totals tt;
	size_t i;

	fflush(stdout);		/* after the table, not inside it */
	for (i = 0; summary_per_target(ctl) && i < ctl->ntargets; i++) {
		const struct target *t = &ctl->targets[i];
		/* one that exited before it was opened has no known name */
		/* comm is the process's own to set: escape sequences included */
		char *label = t->comm[0] ? xasprintf("PID %d (%s)%s", (int) t->pid, esc(t->comm),
						     t->gone && t->npieces ? ", exited" : "")
					 : xasprintf("PID %d", (int) t->pid);

		if (no_rows_reason(t)) {
			fprintf(stderr, "%s: %s\n", label, no_rows_reason(t));
		} else {
			memset(&tt, 0, sizeof(tt));
			tt.measured = (ctl->needs & NEED_PAGES) && t->error != ESRCH;
			count_target(t, &tt);
			print_totals_line(ctl, label, &tt);
		}
		free(label);
	}
	count_totals(ctl, &tt);
	print_totals_line(ctl, "summary", &tt);
}

/* The members of a totals object, without the braces. */
static char *totals_json(const struct pmadvise *ctl, const struct totals *tt)
{
	if (ctl->dry_run)
		return xasprintf("\"rows\": %zu, \"dry-run\": %zu, "
				 "\"rss\": %" PRIu64 ", \"swap\": %" PRIu64,
				 tt->rows, tt->dry_run, tt->before.rss, tt->before.swap);
	if (tt->measured)
		return xasprintf("\"rows\": %zu, \"ok\": %zu, \"failed\": %zu, "
				 "\"skipped\": %zu, \"not-run\": %zu, \"advised\": %" PRIu64 ", "
				 "\"rss\": %" PRIu64 ", \"rss-after\": %" PRIu64 ", "
				 "\"swap\": %" PRIu64 ", \"swap-after\": %" PRIu64,
				 tt->rows, tt->ok, tt->failed, tt->skipped, tt->not_run, tt->advised,
				 tt->before.rss, tt->after.rss, tt->before.swap, tt->after.swap);
	return xasprintf("\"rows\": %zu, \"ok\": %zu, \"failed\": %zu, "
			 "\"skipped\": %zu, \"not-run\": %zu, \"advised\": %" PRIu64,
			 tt->rows, tt->ok, tt->failed, tt->skipped, tt->not_run, tt->advised);
}

/* A JSON string's contents: quotes, backslashes and control bytes escaped. */
static char *json_escape(const char *text)
{
	char *out = xmalloc(strlen(text) * 6 + 1), *o = out;

	for (; *text; text++) {
		unsigned char ch = (unsigned char) *text;

		if (ch == '"' || ch == '\\') {
			*o++ = '\\';
			*o++ = (char) ch;
		} else if (ch < 0x20 || ch == 0x7f) {
			o += sprintf(o, "\\u%04x", ch);
		} else {
			*o++ = (char) ch;
		}
	}
	*o = '\0';
	return out;
}

static char *summary_json(const struct pmadvise *ctl)
{
	struct totals tt;
	char *members, *text = NULL;
	size_t i, len = 0;
	FILE *out = open_memstream(&text, &len);

	if (!out)
		err(EXIT_FAILURE, "cannot allocate memory");
	count_totals(ctl, &tt);
	members = totals_json(ctl, &tt);
	fprintf(out, "\"summary\": {%s", members);
	free(members);
	if (summary_per_target(ctl)) {
		fputs(", \"targets\": [", out);
		for (i = 0; i < ctl->ntargets; i++) {
			const struct target *t = &ctl->targets[i];
			char *comm = json_escape(t->comm);

			memset(&tt, 0, sizeof(tt));
			tt.measured = (ctl->needs & NEED_PAGES) && t->error != ESRCH;
			count_target(t, &tt);
			members = totals_json(ctl, &tt);
			fprintf(out, "%s{\"pid\": %d, \"comm\": \"%s\", \"exited\": %s, ",
				i ? ", " : "", (int) t->pid, comm,
				t->gone && !t->kernel_thread ? "true" : "false");
			if (no_rows_reason(t))
				fprintf(out, "\"note\": \"%s\", ", no_rows_reason(t));
			fprintf(out, "%s}", members);
			free(members);
			free(comm);
		}
		fputc(']', out);
	}
	fputc('}', out);
	if (fclose(out) != 0)
		err(EXIT_FAILURE, "cannot allocate memory");
	return text;
}

static void list_columns(const struct pmadvise *ctl)
{
	static const char *const type_names[] = {
		[TYPE_STRING] = "string", [TYPE_NUMBER] = "number", [TYPE_SIZE] = "size",
		[TYPE_DELTA] = "size change"
	};
	struct libscols_table *tb = new_table(ctl, "columns");
	size_t i;

	if (!scols_table_new_column(tb, "NAME", 0, 0)
	    || !scols_table_new_column(tb, "TYPE", 0, 0)
	    || !scols_table_new_column(tb, "DESCRIPTION", 0, 0))
		err(EXIT_FAILURE, "cannot create a column");
	for (i = 0; i < NCOLUMNS; i++) {
		struct libscols_line *ln = scols_table_new_line(tb, NULL);

		if (!ln)
			err(EXIT_FAILURE, "cannot create a table line");
		scols_line_set_data(ln, 0, infos[i].name);
		scols_line_set_data(ln, 1, type_names[infos[i].type]);
		scols_line_set_data(ln, 2, infos[i].help);
	}
	scols_print_table(tb);
	scols_unref_table(tb);
}

/*
 * --ksm-status: what KSM does for each target, from /proc/PID/ksm_stat.
 */
struct ksm_field {
	const char *key;		/* in ksm_stat */
	const char *column;
	bool number;
};

static const struct ksm_field ksm_fields[] = {
	{ "ksm_merge_any",      "MERGE-ANY",     false },
	{ "ksm_mergeable",      "MERGEABLE",     false },
	{ "ksm_merging_pages",  "MERGING-PAGES", true },
	{ "ksm_process_profit", "PROFIT",        true },
	{ "ksm_rmap_items",     "RMAP-ITEMS",    true },
	{ "ksm_zero_pages",     "ZERO-PAGES",    true },
};

/* "key value" or "key: value"; NULL when the kernel does not report it. */
static char *ksm_stat_value(const char *text, const char *key)
{
	size_t len = strlen(key);
	const char *p = text;

	while (p && *p) {
		if (strncmp(p, key, len) == 0 && (p[len] == ' ' || p[len] == ':')) {
			p += len;
			p += strspn(p, ": \t");
			return strndup(p, strcspn(p, "\n"));
		}
		p = strchr(p, '\n');
		if (p)
			p++;
	}
	return NULL;
}

static int print_ksm_status(struct pmadvise *ctl)
{
	struct libscols_table *tb = new_table(ctl, "ksm");
	size_t i, j, failures = 0, no_ksm_stat = 0;
	struct libscols_column *cl;

	if (!(cl = scols_table_new_column(tb, "PID", 5, SCOLS_FL_RIGHT)))
		err(EXIT_FAILURE, "cannot create a column");
	scols_column_set_json_type(cl, SCOLS_JSON_NUMBER);
	if (!scols_table_new_column(tb, "COMM", 15, 0))
		err(EXIT_FAILURE, "cannot create a column");
	for (j = 0; j < sizeof(ksm_fields) / sizeof(ksm_fields[0]); j++) {
		cl = scols_table_new_column(tb, ksm_fields[j].column, 5, SCOLS_FL_RIGHT);
		if (!cl)
			err(EXIT_FAILURE, "cannot create a column");
		scols_column_set_json_type(cl, ksm_fields[j].number ? SCOLS_JSON_NUMBER
							  : SCOLS_JSON_STRING);
	}
	for (i = 0; i < ctl->ntargets; i++) {
		struct target *t = &ctl->targets[i];
		struct libscols_line *ln;
		char *text;

		if ((t->pidfd >= 0 ? pin_target(t, t->pidfd) : open_target(t)) != 0) {
			failures++;
			continue;
		}
		text = read_proc_file(t->procfd, "ksm_stat", NULL);
		if (!text) {
			if (errno == ENOENT) {
				warnx("PID %d: this kernel has no /proc/PID/ksm_stat (Linux 6.1 or later)",
				      (int) t->pid);
				no_ksm_stat++;
			} else
				warn("PID %d: cannot read /proc/%d/ksm_stat", (int) t->pid, (int) t->pid);
			failures++;
			continue;
		}
		ln = scols_table_new_line(tb, NULL);
		if (!ln)
			err(EXIT_FAILURE, "cannot create a table line");
		scols_line_refer_data(ln, 0, xasprintf("%d", (int) t->pid));
		scols_line_set_data(ln, 1, t->comm);
		for (j = 0; j < sizeof(ksm_fields) / sizeof(ksm_fields[0]); j++) {
			char *value = ksm_stat_value(text, ksm_fields[j].key);

			if (value)
				scols_line_refer_data(ln, j + 2, value);
		}
		free(text);
	}
	if (!ctl->quiet && failures < ctl->ntargets)
		scols_print_table(tb);
	scols_unref_table(tb);
	if (failures == 0)
		return EXIT_SUCCESS;
	if (failures < ctl->ntargets)
		return EXIT_SOME_FAILED;
	/* a kernel without ksm_stat: not supported here, as for advice */
	return no_ksm_stat == ctl->ntargets ? EXIT_NOT_SUPPORTED : EXIT_FAILURE;
}

/*
 * Launcher mode: KSM for a program started from here (PR_SET_MEMORY_MERGE is
 * inherited across fork and, since Linux 6.7, across exec).
 */
static void warn_if_ksm_stopped(void)
{
	char *run = read_proc_file(AT_FDCWD, "/sys/kernel/mm/ksm/run", NULL);

	if (run && run[0] != '1')
		warnx("KSM is not running: start it with 'echo 1 > /sys/kernel/mm/ksm/run'");
	free(run);
}

static void __attribute__((noreturn)) launch(const struct pmadvise *ctl, char **argv)
{
	bool merge = ctl->advice.value == MADV_MERGEABLE;

	if (prctl(PR_SET_MEMORY_MERGE, merge ? 1 : 0, 0, 0, 0) != 0) {
		if (errno == EINVAL)
			errx(EXIT_NOT_SUPPORTED, "this kernel has no PR_SET_MEMORY_MERGE (Linux 6.4): "
			     "launcher mode needs Linux 6.7 or later with CONFIG_KSM, "
			     "where the flag is kept across exec");
		if (errno == EPERM)
			errx(EXIT_FAILURE, "PR_SET_MEMORY_MERGE: operation not permitted "
			     "(refused by a seccomp filter or a security module)");
		err(EXIT_FAILURE, "PR_SET_MEMORY_MERGE");
	}
	if (merge)
		warn_if_ksm_stopped();
	execvp(argv[0], argv);
	{
		int error = errno;

		warn("failed to execute %s", esc(argv[0]));
		_exit(error == ENOENT ? 127 : 126);
	}
}

/*
 * main
 */
static void __attribute__((noreturn)) usage(void)
{
	FILE *out = stdout;
	size_t i;

	fputs("Usage:\n", out);
	fputs(" pmadvise [options] --pid PID[,PID...] ADVICE [RANGE...]\n", out);
	fputs(" pmadvise [options] --pidfd FD ADVICE [RANGE...]\n", out);
	fputs(" pmadvise [options] --cgroup DIR ADVICE [RANGE...]\n", out);
	fputs(" pmadvise [options] --pid PID --rule SELECTOR=ADVICE... [RANGE...]\n", out);
	fputs(" pmadvise mergeable|unmergeable -- COMMAND [ARG...]\n", out);
	fputs(" pmadvise --ksm-status --pid PID[,PID...]\n", out);
	fputs("\nGive memory-management advice to another process's memory.\n", out);

	fputs("\nTargets:\n", out);
	fputs(" -p, --pid PID[,PID...]    advise these processes\n", out);
	fputs(" -P, --pidfd FD            advise the process behind an inherited pidfd\n", out);
	fputs(" -c, --cgroup DIR          advise every process in a cgroup (repeatable)\n", out);
	fputs("     --recursive           with --cgroup: the cgroups below DIR too\n", out);

	fputs("\nWhat to advise:\n", out);
	fputs(" -s, --select EXPR         mappings matching EXPR (repeatable: union)\n", out);
	fputs(" -x, --exclude EXPR        leave out mappings matching EXPR (repeatable)\n", out);
	fputs(" -m, --maps FILE           ranges from maps-format lines ('-' for stdin)\n", out);
	fputs(" -R, --rule SELECTOR=ADVICE  advise what SELECTOR (a RANGE or EXPR) picks;\n"
	      "                           repeatable, the first rule that picks a piece wins\n", out);
	fputs("     --dry-run             select and print, advise nothing\n", out);
	fputs("     --inject              mergeable/unmergeable for a running process: it\n"
	      "                           makes the call itself, through ptrace (x86-64)\n", out);
	fputs("     --timeout DURATION    stop cleanly after DURATION (seconds, or with s, m,\n"
	      "                           h or d; 0 means no limit) and exit 124\n", out);

	fputs("\nOutput:\n", out);
	fputs(" -o, --output LIST         columns to print (+LIST adds to the default)\n", out);
	fputs("     --output-all          print all columns\n", out);
	fputs(" -J, --json                use JSON output format\n", out);
	fputs(" -r, --raw                 use raw output format\n", out);
	fputs(" -n, --noheadings          don't print headings\n", out);
	fputs(" -b, --bytes               print sizes in bytes rather than in human form\n", out);
	fputs(" -H, --list-columns        list the available columns\n", out);
	fputs(" -q, --quiet               print no table, only errors\n", out);
	fputs("     --summary             print a totals line, and one per process when there\n"
	      "                           are several (JSON: a \"summary\" member)\n", out);
	fputs("     --progress            show a progress line on stderr even when it is no\n"
	      "                           terminal (by default: on a terminal, after 1 s)\n", out);
	fputs("     --no-progress         never show the progress line\n", out);
	fputs("     --ksm-status          print the targets' KSM state (/proc/PID/ksm_stat)\n", out);

	fputs("\n -h, --help                display this help\n", out);
	fputs(" -V, --version             display version\n", out);

	fputs("\nAdvice:\n", out);
	for (i = 0; i < sizeof(advices) / sizeof(advices[0]); i++)
		fprintf(out, " %-12s  %s\n", advices[i].name, advices[i].effect);

	fputs("\nRanges: START-END, START+SIZE, ADDR (whole mapping); addresses in hex.\n", out);
	fputs("Selector terms (comma: all must hold):\n", out);
	for (i = 0; i < selector_terms_count; i++)
		fprintf(out, " %-12s  %s\n", selector_terms[i].name, selector_terms[i].help);

	fputs("\nFor more details see pmadvise(1).\n", out);
	exit(EXIT_SUCCESS);
}

static void __attribute__((noreturn)) print_version(void)
{
	const char *scols = NULL;

	scols_get_library_version(&scols);
	printf("pmadvise from pmadvise %s (libsmartcols %s; process_madvise: %s)\n",
	       PACKAGE_VERSION, scols ? scols : "?",
#ifdef HAVE_PROCESS_MADVISE
	       "libc"
#else
	       "syscall"
#endif
	       );
	exit(EXIT_SUCCESS);
}

static uint64_t selected_bytes(const struct target *t)
{
	uint64_t bytes = 0;
	size_t i;

	for (i = 0; i < t->npieces; i++)
		if (t->pieces[i].status == ST_PENDING)
			bytes += t->pieces[i].end - t->pieces[i].start;
	return bytes;
}

/* Two descriptors a target (pidfd, /proc/PID): a cgroup of hundreds needs room. */
static void keep_files_open(size_t ntargets)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur >= ntargets * 2 + 64)
		return;
	rl.rlim_cur = rl.rlim_max == RLIM_INFINITY || rl.rlim_max >= ntargets * 2 + 64
		      ? ntargets * 2 + 64 : rl.rlim_max;
	setrlimit(RLIMIT_NOFILE, &rl);
}

static bool has_rows(const struct pmadvise *ctl)
{
	size_t i;

	for (i = 0; i < ctl->ntargets; i++)
		if (ctl->targets[i].npieces)
			return true;
	return false;
}

static bool has_stopped_rows(const struct pmadvise *ctl)
{
	size_t i, j;

	for (i = 0; i < ctl->ntargets; i++)
		for (j = 0; j < ctl->targets[i].npieces; j++)
			if (ctl->targets[i].pieces[j].error == ECANCELED)
				return true;
	return false;
}

static int exit_status(const struct pmadvise *ctl, size_t target_failures)
{
	struct totals tt;
	size_t failed;

	/* a stop asked for by the user or --timeout wins: the table says what got done */
	if (ctl->stopped)
		return stop_exit_status(stop_signal);
	count_totals(ctl, &tt);
	/* rows of a cgroup's process that exited are no failure: it just went away */
	failed = tt.failed + tt.not_run - tt.exited + target_failures;
	/* a dry run succeeds when it selected something to advise */
	if (ctl->dry_run)
		return tt.dry_run ? EXIT_SUCCESS : EXIT_FAILURE;
	if (ctl->unsupported && tt.ok == 0)
		return EXIT_NOT_SUPPORTED;
	if (failed == 0)
		return EXIT_SUCCESS;
	if (tt.ok == 0)
		return EXIT_FAILURE;
	return EXIT_SOME_FAILED;
}

/* Everything is freed on the way out, so that leak checkers see real leaks only. */
static struct pmadvise *run_ctl;

static void free_run(void)
{
	struct pmadvise *ctl = run_ctl;
	size_t i;

	if (!ctl)
		return;
	for (i = 0; i < ctl->ntargets; i++) {
		struct target *t = &ctl->targets[i];

		if (t->scan_open)
			page_scan_close(&t->scan);
		free_target_maps(t);
		free(t->pieces);
		free(t->measures);
	}
	free(ctl->targets);
	free(ctl->ranges);
	for (i = 0; i < ctl->nselects; i++)
		free_selector(&ctl->selects[i]);
	free(ctl->selects);
	for (i = 0; i < ctl->nexcludes; i++)
		free_selector(&ctl->excludes[i]);
	free(ctl->excludes);
	for (i = 0; i < ctl->nrules; i++) {
		free(ctl->rules[i].text);
		if (!ctl->rules[i].is_range)
			free_selector(&ctl->rules[i].sel);
	}
	free(ctl->rules);
	free(ctl->pid_args);
	free(ctl->pidfd_args);
	free(ctl->cgroup_args);
	run_ctl = NULL;
}

/*
 * --inject (lib/inject.c, engine.c): KSM for a running process, made by the
 * process itself.  Wrong combinations are usage errors, before any syscall.
 */
static void check_inject_usage(const struct pmadvise *ctl)
{
	if (ctl->nrules)
		errx(EXIT_FAILURE, "--inject does not go with --rule: give mergeable or "
		     "unmergeable as the ADVICE");
	if (ctl->advice.value != MADV_MERGEABLE && ctl->advice.value != MADV_UNMERGEABLE)
		errx(EXIT_FAILURE, "--inject is only for mergeable and unmergeable, not '%s' "
		     "(the kernel takes that one from another process: drop --inject)",
		     ctl->advice.name);
	if (!has_targets(ctl))
		errx(EXIT_FAILURE, "--inject needs a running process: name it with --pid, "
		     "--pidfd or --cgroup (to start a program with KSM, use "
		     "'pmadvise %s -- COMMAND')", ctl->advice.name);
	if (!inject_supported())
		errx(EXIT_NOT_SUPPORTED, "--inject is not supported on this architecture "
		     "(it needs x86-64)");
}

/* --inject --select all: one row per target, for one prctl(PR_SET_MEMORY_MERGE). */
static void make_whole_process_row(struct pmadvise *ctl, struct target *t)
{
	struct piece *pc = &t->pieces[0];

	memset(pc, 0, sizeof(*pc));
	pc->status = ST_PENDING;
	pc->advice = &ctl->advice;
	pc->selected = true;
	pc->whole_process = true;
	t->npieces = 1;
}

int main(int argc, char **argv)
{
	enum {
		OPT_DRY_RUN = CHAR_MAX + 1, OPT_OUTPUT_ALL, OPT_SUMMARY, OPT_KSM_STATUS,
		OPT_RECURSIVE, OPT_PROGRESS, OPT_NO_PROGRESS, OPT_TIMEOUT, OPT_INJECT
	};
	static const struct option longopts[] = {
		{ "pid",          required_argument, NULL, 'p' },
		{ "pidfd",        required_argument, NULL, 'P' },
		{ "cgroup",       required_argument, NULL, 'c' },
		{ "recursive",    no_argument,       NULL, OPT_RECURSIVE },
		{ "select",       required_argument, NULL, 's' },
		{ "exclude",      required_argument, NULL, 'x' },
		{ "rule",         required_argument, NULL, 'R' },
		{ "maps",         required_argument, NULL, 'm' },
		{ "dry-run",      no_argument,       NULL, OPT_DRY_RUN },
		{ "output",       required_argument, NULL, 'o' },
		{ "output-all",   no_argument,       NULL, OPT_OUTPUT_ALL },
		{ "json",         no_argument,       NULL, 'J' },
		{ "raw",          no_argument,       NULL, 'r' },
		{ "noheadings",   no_argument,       NULL, 'n' },
		{ "bytes",        no_argument,       NULL, 'b' },
		{ "list-columns", no_argument,       NULL, 'H' },
		{ "quiet",        no_argument,       NULL, 'q' },
		{ "summary",      no_argument,       NULL, OPT_SUMMARY },
		{ "ksm-status",   no_argument,       NULL, OPT_KSM_STATUS },
		{ "inject",       no_argument,       NULL, OPT_INJECT },
		{ "progress",     no_argument,       NULL, OPT_PROGRESS },
		{ "no-progress",  no_argument,       NULL, OPT_NO_PROGRESS },
		{ "timeout",      required_argument, NULL, OPT_TIMEOUT },
		{ "help",         no_argument,       NULL, 'h' },
		{ "version",      no_argument,       NULL, 'V' },
		{ NULL, 0, NULL, 0 }
	};
	static struct pmadvise ctl;
	const char *outarg = NULL, *maps_file = NULL;
	size_t target_failures = 0, maps_read = 0, i;
	bool list = false, output_all = false, ksm_status = false;
	int progress = -1;		/* -1: on a terminal, 0: never, 1: always */
	double timeout = 0;
	char **command = NULL;
	int c, nopts = argc, ncommand = 0;

	atexit(close_stdout);
	run_ctl = &ctl;
	atexit(free_run);
	ctl.page_size = (uint64_t) sysconf(_SC_PAGESIZE);

	/*
	 * "--" ends the options.  Without a target, what follows is a command
	 * to launch; with one, more RANGEs.  getopt must not see past it.
	 */
	for (i = 1; i < (size_t) argc; i++) {
		if (strcmp(argv[i], "--") == 0) {
			nopts = (int) i;
			command = &argv[i + 1];
			ncommand = argc - (int) i - 1;
			break;
		}
	}

	while ((c = getopt_long(nopts, argv, "p:P:c:s:x:R:m:o:JrnbHqhV", longopts, NULL)) != -1) {
		switch (c) {
		case 'p':
			ctl.pid_args = xreallocarray(ctl.pid_args, ctl.npid_args + 1,
						     sizeof(*ctl.pid_args));
			ctl.pid_args[ctl.npid_args++] = optarg;
			break;
		case 'P':
			ctl.pidfd_args = xreallocarray(ctl.pidfd_args, ctl.npidfd_args + 1,
						       sizeof(*ctl.pidfd_args));
			ctl.pidfd_args[ctl.npidfd_args++] = optarg;
			break;
		case 'c':
			ctl.cgroup_args = xreallocarray(ctl.cgroup_args, ctl.ncgroup_args + 1,
							sizeof(*ctl.cgroup_args));
			ctl.cgroup_args[ctl.ncgroup_args++] = optarg;
			break;
		case OPT_RECURSIVE:
			ctl.recursive = true;
			break;
		case 's':
			add_selector(&ctl.selects, &ctl.nselects, optarg, "--select");
			break;
		case 'x':
			add_selector(&ctl.excludes, &ctl.nexcludes, optarg, "--exclude");
			break;
		case 'R':
			add_rule(&ctl, optarg, ctl.page_size);
			break;
		case 'm':
			if (maps_file)
				errx(EXIT_FAILURE, "--maps may be given once");
			maps_file = optarg;
			break;
		case OPT_DRY_RUN:
			ctl.dry_run = true;
			break;
		case 'o':
			outarg = optarg;
			break;
		case OPT_OUTPUT_ALL:
			output_all = true;
			break;
		case 'J':
			ctl.json = true;
			break;
		case 'r':
			ctl.raw = true;
			break;
		case 'n':
			ctl.noheadings = true;
			break;
		case 'b':
			ctl.bytes = true;
			break;
		case 'H':
			list = true;
			break;
		case 'q':
			ctl.quiet = true;
			break;
		case OPT_SUMMARY:
			ctl.summary = true;
			break;
		case OPT_KSM_STATUS:
			ksm_status = true;
			break;
		case OPT_INJECT:
			ctl.inject = true;
			break;
		case OPT_PROGRESS:
			progress = 1;
			break;
		case OPT_NO_PROGRESS:
			progress = 0;
			break;
		case OPT_TIMEOUT: {
			const char *why = NULL;

			if (parse_duration(optarg, &timeout, &why) != 0)
				errx(EXIT_FAILURE, "invalid --timeout '%s': %s", esc(optarg), why);
			break;
		}
		case 'h':
			usage();
		case 'V':
			print_version();
		default:
			fprintf(stderr, "Try 'pmadvise --help' for more information.\n");
			exit(EXIT_FAILURE);
		}
	}

	if (list) {
		list_columns(&ctl);
		return EXIT_SUCCESS;
	}

	/* columns first: an unknown one is an input error like any other */
	for (i = 0; i < sizeof(default_columns) / sizeof(default_columns[0]); i++) {
		/* with rules, rows differ in advice: show it (and the rule under --dry-run);
		 * --inject rows say how it was given */
		if ((ctl.nrules || ctl.inject) && default_columns[i] == COL_ADVISED) {
			add_column(&ctl, COL_ADVICE);
			if (ctl.dry_run && ctl.nrules)
				add_column(&ctl, COL_RULE);
		}
		add_column(&ctl, default_columns[i]);
	}
	/* --inject --select all: a row per process, and no addresses to show */
	if (ctl.inject && inject_whole_process(&ctl)) {
		ctl.ncolumns = 0;
		add_column(&ctl, COL_PID);
		add_column(&ctl, COL_COMM);
		add_column(&ctl, COL_ADVICE);
		add_column(&ctl, COL_STATUS);
	}
	if (output_all) {
		ctl.ncolumns = 0;
		for (i = 0; i < NCOLUMNS; i++)
			add_column(&ctl, (int) i);
	}
	if (outarg)
		parse_columns(&ctl, outarg);
	if (!ctl.quiet)
		for (i = 0; i < ctl.ncolumns; i++)
			ctl.needs |= infos[ctl.columns[i]].needs;
	if (ctl.summary)
		ctl.needs |= NEED_PAGES | NEED_AFTER;

	if (ksm_status && ctl.inject)
		errx(EXIT_FAILURE, "--inject does not go with --ksm-status");
	if (ksm_status) {
		if (optind < nopts || command)
			errx(EXIT_FAILURE, "--ksm-status takes no ADVICE or RANGE");
		if (!has_targets(&ctl))
			errx(EXIT_FAILURE, "--ksm-status needs --pid, --pidfd or --cgroup");
		add_targets(&ctl);
		return print_ksm_status(&ctl);
	}

	if (ctl.nrules) {
		/* every rule names its advice: what follows the options are RANGEs */
		if (optind < nopts && is_advice_name(argv[optind]))
			errx(EXIT_FAILURE, "ADVICE '%s' cannot be given with --rule: each rule "
			     "names its own (SELECTOR=ADVICE)", esc(argv[optind]));
		if (!has_targets(&ctl))
			errx(EXIT_FAILURE, "--rule needs a target: use --pid, --pidfd or --cgroup");
	} else {
		if (optind >= nopts)
			errx(EXIT_FAILURE, "no advice given (try 'pmadvise --help')");
		parse_advice(&ctl.advice, argv[optind++], "");
	}

	if (ctl.recursive && !ctl.ncgroup_args)
		errx(EXIT_FAILURE, "--recursive goes with --cgroup");
	if (ctl.inject)
		check_inject_usage(&ctl);
	if (!has_targets(&ctl)) {
		if (command) {
			if (ctl.advice.value != MADV_MERGEABLE && ctl.advice.value != MADV_UNMERGEABLE)
				errx(EXIT_FAILURE, "only mergeable and unmergeable can launch a "
				     "command; to advise a process, name it with --pid");
			if (optind < nopts || ctl.nselects || ctl.nexcludes || maps_file)
				errx(EXIT_FAILURE, "launcher mode takes no ranges or selectors");
			if (ncommand == 0)
				errx(EXIT_FAILURE, "no command given after '--'");
			launch(&ctl, command);
		}
		errx(EXIT_FAILURE, "no target given: use --pid, --pidfd or --cgroup");
	}

	for (; optind < nopts; optind++)
		parse_range_arg(&ctl, argv[optind]);
	for (c = 0; c < ncommand; c++)
		parse_range_arg(&ctl, command[c]);
	if (maps_file)
		read_maps_input(&ctl, maps_file);
	if (!ctl.nranges && !ctl.nselects && !ctl.nexcludes && !ctl.nrules)
		errx(EXIT_FAILURE, "nothing selected: give a RANGE, --select, --exclude or --maps");

	/* from here on, a stop request ends the run cleanly, with its table */
	catch_stop_signals();
	if (arm_timeout(timeout) != 0)
		err(EXIT_FAILURE, "cannot set the --timeout timer");
	/* the line appears once the run has lasted a second, opening included */
	progress_init(&ctl.progress, progress == 1 || (progress == -1 && !ctl.quiet
				     && !ctl.json && !ctl.dry_run && isatty(STDERR_FILENO)));
	add_targets(&ctl);
	keep_files_open(ctl.ntargets);
	/* several targets: rows need their PID, unless the columns were chosen */
	if (ctl.ntargets > 1 && !output_all && (!outarg || *outarg == '+')
	    && !has_column(&ctl, COL_PID)) {
		if (ctl.ncolumns >= sizeof(ctl.columns) / sizeof(ctl.columns[0]))
			errx(EXIT_FAILURE, "too many columns in --output");
		memmove(&ctl.columns[1], &ctl.columns[0], ctl.ncolumns * sizeof(ctl.columns[0]));
		ctl.columns[0] = COL_PID;
		ctl.ncolumns++;
	}

	/* open every target and choose its pieces before advising anything */
	for (i = 0; i < ctl.ntargets; i++) {
		struct target *t = &ctl.targets[i];
		int rc;

		/* hundreds of processes take a while to open: a stop is honoured here too */
		if (stop_signal) {
			t->error = ECANCELED;
			ctl.stopped = true;
			continue;
		}
		rc = t->pidfd >= 0 ? pin_target(t, t->pidfd) : open_target(t);
		if (rc == -ENOSYS)
			ctl.unsupported = true;
		if (rc == 0 && (rc = read_target_maps(t)) != 0) {
			report_target_error(&ctl, t, &ctl.advice, -rc == ENOENT ? ESRCH : -rc);
			rc = -1;
		}
		if (rc == 0 && t->nmaps == 0) {
			if (!exit_is_expected(t, ESRCH))
				warnx("PID %d: process has no memory mappings (a kernel thread "
				      "or exiting)", (int) t->pid);
			rc = -1;
		}
		if (rc == 0) {
			maps_read++;
			select_pieces(&ctl, t);
			if (ctl.inject && inject_whole_process(&ctl) && t->npieces)
				make_whole_process_row(&ctl, t);
			if (t->npieces == 0) {
				char *what = describe_selection(&ctl);

				/* in a cgroup, a process without such mappings is no surprise */
				if (!t->from_cgroup)
					warnx("PID %d: nothing selected by %s", (int) t->pid, what);
				free(what);
				t->none_selected = true;
				rc = -1;
			}
		}
		if (rc != 0) {
			t->error = rc;
			if (!t->gone && !(t->from_cgroup && t->none_selected))
				target_failures++;
		}
		ctl.selected_bytes += selected_bytes(t);
	}

	/* a rule's word is worth saying only where some maps were read */
	for (i = 0; i < ctl.nrules && maps_read; i++)
		if (!ctl.rules[i].matches)
			warnx("--rule '%s' selects nothing", esc(ctl.rules[i].text));
	if (!has_rows(&ctl)) {
		if (ctl.ncgroup_args && target_failures == 0 && maps_read) {
			char *what = describe_selection(&ctl);

			warnx("nothing selected by %s in any process", what);
			free(what);
		} else if (ctl.ncgroup_args && target_failures == 0) {
			warnx("every process of the cgroup has exited: nothing to advise");
		}
		if (ctl.summary && ctl.json) {
			/* -J: the totals say why there is no row, as JSON all the same */
			char *member = summary_json(&ctl);

			printf("{\n   %s\n}\n", member);
			free(member);
		} else if (ctl.summary) {
			print_summary(&ctl);
		}
		if (ctl.stopped) {
			warnx("%s before anything was advised", stop_reason(stop_signal));
			return stop_exit_status(stop_signal);
		}
		/* no pidfd_open: this kernel is too old (SPEC §10: exit 2) */
		return ctl.unsupported ? EXIT_NOT_SUPPORTED : EXIT_FAILURE;
	}

	for (i = 0; i < ctl.ntargets; i++, ctl.targets_done++) {
		struct target *t = &ctl.targets[i];
		size_t j;

		if (t->error)
			continue;
		if (stop_signal && !ctl.dry_run) {
			/* nothing of it was measured or advised */
			stop_target(t, ECANCELED);
			continue;
		}
		measure_target(&ctl, t, false);
		if (ctl.dry_run) {
			for (j = 0; j < t->npieces; j++)
				if (t->pieces[j].status == ST_PENDING)
					t->pieces[j].status = ST_DRY_RUN;
			continue;
		}
		/* a process that has exited has nothing left to measure */
		if ((ctl.inject ? inject_all(&ctl, t) : advise_all(&ctl, t)) == 0) {
			if (t->error != ESRCH)
				measure_target(&ctl, t, true);
		} else if (!t->gone) {
			target_failures++;
		}
		explain_refusals(t);
		warn_failed_rows(&ctl, t);
	}
	release_stop_signals();
	progress_clear(&ctl.progress);
	/* a stop that came after the last call, or in a dry run, stopped nothing */
	ctl.stopped = ctl.stopped || has_stopped_rows(&ctl);
	if (ctl.stopped)
		warnx("%s before everything was advised", stop_reason(stop_signal));

	if (ctl.summary && ctl.json) {
		char *member = summary_json(&ctl);

		if (!ctl.quiet && has_rows(&ctl))
			print_table(&ctl, member);
		else
			printf("{\n   %s\n}\n", member);
		free(member);
	} else {
		if (!ctl.quiet && has_rows(&ctl))
			print_table(&ctl, NULL);
		if (ctl.summary)
			print_summary(&ctl);
	}
	return exit_status(&ctl, target_failures);
}
