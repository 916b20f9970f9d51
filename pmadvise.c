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

#include "lib/cgroup.h"
#include "lib/measure.h"
#include "lib/parse.h"
#include "lib/progress.h"

#ifndef PACKAGE_VERSION
# define PACKAGE_VERSION "unknown"
#endif

/* Fallbacks for headers older than the kernels that know these. */
#ifndef MADV_WILLNEED
# define MADV_WILLNEED 3
#endif
#ifndef MADV_MERGEABLE
# define MADV_MERGEABLE 12
#endif
#ifndef MADV_UNMERGEABLE
# define MADV_UNMERGEABLE 13
#endif
#ifndef MADV_COLD
# define MADV_COLD 20
#endif
#ifndef MADV_PAGEOUT
# define MADV_PAGEOUT 21
#endif
#ifndef MADV_COLLAPSE
# define MADV_COLLAPSE 25
#endif
#ifndef PR_SET_MEMORY_MERGE
# define PR_SET_MEMORY_MERGE 67
#endif
#ifndef SYS_process_madvise
# define SYS_process_madvise 440
#endif
#ifndef SYS_pidfd_open
# define SYS_pidfd_open 434
#endif
#ifndef SYS_pidfd_send_signal
# define SYS_pidfd_send_signal 424
#endif

#define PF_KTHREAD		0x00200000	/* include/linux/sched.h */

/* The kernel takes at most UIO_MAXIOV iovecs per call ... */
#define BATCH_MAX_ENTRIES	1024
/* ... and silently truncates a call's total to MAX_RW_COUNT bytes. */
#define MAX_RW_COUNT		UINT64_C(0x7ffff000)
/* EAGAIN and EINTR are retried this many times at the same place. */
#define MAX_RETRIES		5

#define EXIT_NOT_SUPPORTED	2
#define EXIT_SOME_FAILED	64

/*
 * Advice
 */
struct advice_info {
	const char *name;
	int value;
	const char *remote_since;	/* NULL: mainline never took it remotely */
	const char *effect;
};

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

/* The advice chosen for a run or a rule. */
struct advice {
	const struct advice_info *info;	/* NULL for a bare number the table lacks */
	int value;
	const char *name;
};

/*
 * Output columns
 */
enum {
	COL_PID,
	COL_COMM,
	COL_START,
	COL_END,
	COL_SIZE,
	COL_PERMS,
	COL_OFFSET,
	COL_DEVICE,
	COL_INODE,
	COL_PATH,
	COL_ADVICE,
	COL_ADVISED,
	COL_STATUS,
	COL_ERRNO,
	COL_REASON,
	COL_RSS,
	COL_RSS_AFTER,
	COL_RSS_DELTA,
	COL_SWAP,
	COL_SWAP_AFTER,
	COL_HUGE,
	COL_HUGE_AFTER,
	COL_REFERENCED,
	COL_REFERENCED_AFTER,
	COL_KSM,
	COL_RULE,
	NCOLUMNS
};

enum column_type { TYPE_STRING, TYPE_NUMBER, TYPE_SIZE, TYPE_DELTA };

/* What a column needs measured; nothing is read that no column needs. */
enum {
	NEED_PAGES  = 1 << 0,		/* pagemap, before the advice */
	NEED_SMAPS  = 1 << 1,		/* smaps, before the advice */
	NEED_AFTER  = 1 << 2		/* the same again after it */
};

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
enum status {
	ST_PENDING,			/* not advised yet */
	ST_OK,
	ST_FAILED,
	ST_UNMAPPED,
	ST_SKIPPED,
	ST_NOT_RUN,
	ST_PARTIAL,
	ST_DRY_RUN
};

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

/* One row: a part of one mapping, or a hole in an explicit range. */
struct piece {
	uint64_t start;
	uint64_t end;
	const struct maps_entry *mapping;	/* NULL for a hole */
	uint64_t advised;			/* bytes done so far */
	enum status status;
	int error;				/* errno, 0 if none */
	const char *reason;
	const struct advice *advice;
	size_t rule;				/* 1-based --rule, 0 without rules */
	bool selected;				/* by --select/--exclude alone */
	unsigned int measured;			/* NEED_* done for this row */
	struct residency before;
	struct residency after;
	uint64_t referenced;
	uint64_t referenced_after;
	uint64_t ksm;
	bool has_ksm;
};

struct target {
	pid_t pid;
	int pidfd;
	int procfd;			/* /proc/PID, pinned by the pidfd check */
	char comm[64];
	char *maps_text;		/* maps entries point into this */
	struct maps_entry *maps;
	size_t nmaps;
	struct piece *pieces;
	size_t npieces;
	int error;			/* fatal for this target, 0 if none */
	bool from_cgroup;		/* found by --cgroup, not named */
	bool gone;			/* from a cgroup, and exited (or never had memory) */
	bool none_selected;		/* the selection picked nothing in it */
	struct page_scan scan;		/* open while measuring */
	bool scan_open;
};

/* Everything a run needs: options, targets and the output table. */
/* -R SELECTOR=ADVICE: a range or a selector expression, and its advice. */
struct rule {
	char *text;
	bool is_range;
	struct range range;
	struct selector sel;
	struct advice advice;
	size_t matches;			/* pieces it chose, over all targets */
};

struct pmadvise {
	struct advice advice;		/* without rules */
	struct rule *rules;
	size_t nrules;

	struct target *targets;
	size_t ntargets;

	struct range *ranges;		/* positional and --maps */
	size_t nranges;
	struct selector *selects;
	size_t nselects;
	struct selector *excludes;
	size_t nexcludes;

	int columns[NCOLUMNS * 2];
	size_t ncolumns;

	uint64_t page_size;

	bool dry_run;
	bool json;
	bool raw;
	bool noheadings;
	bool bytes;
	bool quiet;
	bool summary;
	bool unsupported;		/* the kernel refused the advice as such */
	unsigned int needs;		/* NEED_* of the columns and --summary */

	const char **pid_args;		/* --pid and --pidfd as given */
	size_t npid_args;
	const char **pidfd_args;
	size_t npidfd_args;
	const char **cgroup_args;	/* --cgroup DIRs */
	size_t ncgroup_args;
	bool recursive;

	struct progress progress;
	uint64_t selected_bytes;	/* of every target, for the progress line */
	uint64_t advised_bytes;
	size_t targets_done;
};

/*
 * Small helpers
 */
static void *xmalloc(size_t size)
{
	void *p = malloc(size ? size : 1);

	if (!p)
		err(EXIT_FAILURE, "cannot allocate %zu bytes", size);
	return p;
}

static void *xreallocarray(void *ptr, size_t nmemb, size_t size)
{
	void *p;

	if (size && nmemb > SIZE_MAX / size)
		errx(EXIT_FAILURE, "cannot allocate %zu x %zu bytes", nmemb, size);
	p = realloc(ptr, nmemb && size ? nmemb * size : 1);
	if (!p)
		err(EXIT_FAILURE, "cannot allocate %zu x %zu bytes", nmemb, size);
	return p;
}

static char *xstrdup(const char *s)
{
	char *p = strdup(s);

	if (!p)
		err(EXIT_FAILURE, "cannot allocate memory");
	return p;
}

static char *xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *xasprintf(const char *fmt, ...)
{
	va_list ap;
	char *s;
	int rc;

	va_start(ap, fmt);
	rc = vasprintf(&s, fmt, ap);
	va_end(ap);
	if (rc < 0)
		err(EXIT_FAILURE, "cannot allocate memory");
	return s;
}

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

/* Reads a whole file relative to dirfd; NUL-terminated, *len without it. */
static char *read_proc_file(int dirfd, const char *name, size_t *len)
{
	size_t size = 0, alloc = 65536;
	char *buf;
	int fd;

	fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	buf = xmalloc(alloc);
	for (;;) {
		ssize_t n;

		if (alloc - size < 4096) {
			alloc *= 2;
			buf = xreallocarray(buf, alloc, 1);
		}
		n = read(fd, buf + size, alloc - size - 1);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			free(buf);
			buf = NULL;
			break;
		}
		if (n == 0)
			break;
		size += (size_t) n;
	}
	if (buf) {
		buf[size] = '\0';
		if (len)
			*len = size;
	}
	{
		int saved = errno;

		close(fd);
		errno = saved;
	}
	return buf;
}

/*
 * System calls, through libc where it has them
 */
static int sys_pidfd_open(pid_t pid)
{
#ifdef HAVE_PIDFD_OPEN
	return pidfd_open(pid, 0);
#else
	return (int) syscall(SYS_pidfd_open, pid, 0);
#endif
}

static int sys_pidfd_send_signal(int pidfd, int sig)
{
#ifdef HAVE_PIDFD_SEND_SIGNAL
	return pidfd_send_signal(pidfd, sig, NULL, 0);
#else
	return (int) syscall(SYS_pidfd_send_signal, pidfd, sig, NULL, 0);
#endif
}

static ssize_t sys_process_madvise(int pidfd, const struct iovec *iov,
				   size_t n, int advice)
{
#ifdef HAVE_PROCESS_MADVISE
	return process_madvise(pidfd, iov, n, advice, 0);
#else
	return syscall(SYS_process_madvise, pidfd, iov, n, advice, 0);
#endif
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
			errx(EXIT_FAILURE, "invalid advice number '%s'%s", arg, where);
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
		errx(EXIT_FAILURE, "advice '%s'%s can lose data and is never given", arg, where);
	errx(EXIT_FAILURE, "unknown advice '%s'%s (known: cold, pageout, willneed, "
	     "collapse, mergeable, unmergeable)", arg, where);
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
		errx(EXIT_FAILURE, "invalid --rule '%s': expected SELECTOR=ADVICE", text);
	ctl->rules = xreallocarray(ctl->rules, ctl->nrules + 1, sizeof(*ctl->rules));
	rule = &ctl->rules[ctl->nrules++];
	memset(rule, 0, sizeof(*rule));
	rule->text = xstrdup(text);
	where = xasprintf(" in --rule '%s'", text);
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
			     "selector: %s '%s'", text, selector, why, bad);
		errx(EXIT_FAILURE, "invalid --rule '%s': '%s' is neither a range nor a "
		     "selector: %s", text, selector, why);
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
			errx(EXIT_FAILURE, "unknown column '%.*s' in --output (see --list-columns)",
			     (int) len, p);
		add_column(ctl, id);
		p += len;
	} while (*p++ == ',');
}

/* The target for pid, added unless it is there already. */
static struct target *new_target(struct pmadvise *ctl, pid_t pid)
{
	struct target *t;
	size_t i;

	for (i = 0; i < ctl->ntargets; i++)
		if (ctl->targets[i].pid == pid)
			return &ctl->targets[i];
	ctl->targets = xreallocarray(ctl->targets, ctl->ntargets + 1, sizeof(*ctl->targets));
	t = &ctl->targets[ctl->ntargets++];
	memset(t, 0, sizeof(*t));
	t->pid = pid;
	t->pidfd = -1;
	t->procfd = -1;
	return t;
}

static void add_pid(struct pmadvise *ctl, const char *text)
{
	const char *p = text;

	do {
		size_t len = strcspn(p, ",");
		char *end;
		long pid;

		errno = 0;
		pid = len ? strtol(p, &end, 10) : 0;
		if (!len || !isdigit((unsigned char) *p) || errno || end != p + len
		    || pid <= 0 || pid > INT_MAX)
			errx(EXIT_FAILURE, "invalid PID '%.*s' in --pid '%s'", (int) len, p, text);
		if (pid == getpid())
			errx(EXIT_FAILURE, "PID %ld is pmadvise itself", pid);
		new_target(ctl, (pid_t) pid)->from_cgroup = false;
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
		errx(EXIT_FAILURE, "invalid range '%s': %s", arg, why);
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
			errx(EXIT_FAILURE, "invalid %s '%s': %s '%s'", option, text, why, bad);
		errx(EXIT_FAILURE, "invalid %s '%s': %s", option, text, why);
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
		err(EXIT_FAILURE, "cannot open --maps file %s", file);
	while ((len = getline(&line, &alloc, f)) >= 0) {
		struct range range;
		const char *why = NULL;
		int rc;

		lineno++;
		if (memchr(line, '\0', (size_t) len))
			errx(EXIT_FAILURE, "--maps %s: line %zu: contains a NUL byte", name, lineno);
		rc = parse_maps_input_line(line, ctl->page_size, &range, &why);
		if (rc == -ENODATA)
			continue;
		if (rc == -ENOMEM)
			errx(EXIT_FAILURE, "cannot allocate memory");
		if (rc)
			errx(EXIT_FAILURE, "--maps %s: line %zu: %s", name, lineno, why);
		add_range(ctl, &range);
	}
	if (ferror(f))
		err(EXIT_FAILURE, "cannot read --maps %s", name);
	free(line);
	if (f != stdin)
		fclose(f);
}

/*
 * Targets
 */
static void read_comm(struct target *t)
{
	char *text = read_proc_file(t->procfd, "comm", NULL);

	if (text) {
		text[strcspn(text, "\n")] = '\0';
		snprintf(t->comm, sizeof(t->comm), "%s", text);
		free(text);
	}
}

/* A PID that names a thread of another process: its thread-group ID. */
static pid_t thread_group_of(pid_t tid)
{
	char path[64], *text, *p;
	pid_t tgid = 0;
	int dirfd;

	snprintf(path, sizeof(path), "/proc/%d", (int) tid);
	dirfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dirfd < 0)
		return 0;
	text = read_proc_file(dirfd, "status", NULL);
	close(dirfd);
	if (text && (p = strstr(text, "\nTgid:")))
		tgid = (pid_t) strtol(p + 6, NULL, 10);
	free(text);
	return tgid;
}

/* Zombies and kernel threads have no address space to advise. */
static const char *no_address_space(struct target *t)
{
	unsigned long flags = 0;
	char *text, *p, state = '?';
	const char *why = NULL;
	int field;

	text = read_proc_file(t->procfd, "stat", NULL);
	if (!text)
		return errno == ESRCH ? "process has exited" : NULL;
	/* "pid (comm) state ppid ..." where comm may hold spaces and ')' */
	p = strrchr(text, ')');
	if (p && p[1] == ' ') {
		p += 2;
		state = *p;
		/* flags is field 9; state is field 3 */
		for (field = 3; field < 9 && p; field++) {
			p = strchr(p, ' ');
			if (p)
				p++;
		}
		if (p)
			flags = strtoul(p, NULL, 10);
	}
	if (state == 'Z' || state == 'X')
		why = "process is a zombie: it has no memory left to advise";
	else if (flags & PF_KTHREAD)
		why = "process is a kernel thread: it has no user memory";
	free(text);
	return why;
}

/*
 * A process found in a cgroup may exit at any time, and one without memory
 * (a kernel thread in the root cgroup) is not a target: neither is an error
 * worth a message.  A named process that exits is one.
 */
static bool exit_is_expected(struct target *t, int error)
{
	if (!t->from_cgroup || error != ESRCH)
		return false;
	t->gone = true;
	return true;
}

/*
 * Pins the process race-free: the pidfd is taken first, then /proc/PID is
 * opened, then the pidfd confirms the process is still alive.  A live pidfd
 * keeps its PID from being reused, so the directory is that process's.
 */
static int pin_target(struct target *t, int pidfd)
{
	char path[64];
	const char *why;

	t->pidfd = pidfd;
	snprintf(path, sizeof(path), "/proc/%d", (int) t->pid);
	t->procfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (t->procfd < 0) {
		if (errno == ENOENT) {
			if (!exit_is_expected(t, ESRCH))
				warnx("PID %d: process has exited", (int) t->pid);
			return -ESRCH;
		}
		warn("PID %d: cannot open %s", (int) t->pid, path);
		return -errno;
	}
	/* EPERM only says we may not signal it: it is alive all the same. */
	if (sys_pidfd_send_signal(t->pidfd, 0) != 0 && errno != EPERM) {
		if (!exit_is_expected(t, ESRCH))
			warnx("PID %d: process has exited", (int) t->pid);
		return -ESRCH;
	}
	why = no_address_space(t);
	if (why) {
		if (!exit_is_expected(t, ESRCH))
			warnx("PID %d: %s", (int) t->pid, why);
		return -ESRCH;
	}
	read_comm(t);
	return 0;
}

static int open_target(struct target *t)
{
	int pidfd = sys_pidfd_open(t->pid);

	if (pidfd < 0) {
		int saved = errno;
		pid_t tgid;

		if (saved == ESRCH) {
			if (!exit_is_expected(t, ESRCH))
				warnx("PID %d: no such process", (int) t->pid);
		} else if ((saved == EINVAL || saved == ENOENT)
			   && (tgid = thread_group_of(t->pid)) > 0 && tgid != t->pid) {
			/* a thread's ID: EINVAL before Linux 6.9, ENOENT since */
			warnx("PID %d is a thread of process %d: use --pid %d",
			      (int) t->pid, (int) tgid, (int) tgid);
		} else if (saved == ENOSYS) {
			warnx("PID %d: pidfd_open is not available: pmadvise needs Linux 5.10 or later",
			      (int) t->pid);
		} else {
			errno = saved;
			warn("PID %d: cannot open a pidfd", (int) t->pid);
		}
		return saved == ENOSYS ? -ENOSYS : -saved;
	}
	return pin_target(t, pidfd);
}

/* --pidfd FD: the PID behind it comes from /proc/self/fdinfo/FD. */
static void add_pidfd(struct pmadvise *ctl, const char *arg)
{
	struct target *t;
	char path[64], *text, *p, *end;
	long fd, pid;
	struct stat st;

	errno = 0;
	fd = strtol(arg, &end, 10);
	if (!isdigit((unsigned char) *arg) || errno || *end || fd > INT_MAX)
		errx(EXIT_FAILURE, "invalid file descriptor '%s' for --pidfd", arg);
	if (fstat((int) fd, &st) != 0)
		errx(EXIT_FAILURE, "--pidfd %ld: file descriptor is not open", fd);
	snprintf(path, sizeof(path), "/proc/self/fdinfo/%ld", fd);
	text = read_proc_file(AT_FDCWD, path, NULL);
	if (!text)
		err(EXIT_FAILURE, "--pidfd %ld: cannot read %s", fd, path);
	p = strstr(text, "\nPid:");
	if (!p && strncmp(text, "Pid:", 4) == 0)
		p = text - 1;
	if (!p)
		errx(EXIT_FAILURE, "--pidfd %ld: file descriptor is not a pidfd", fd);
	pid = strtol(p + 5, NULL, 10);
	free(text);
	if (pid == -1)
		errx(EXIT_FAILURE, "--pidfd %ld: the process behind it has exited", fd);
	if (pid == 0)
		errx(EXIT_FAILURE, "--pidfd %ld: the process is in another PID namespace", fd);

	ctl->targets = xreallocarray(ctl->targets, ctl->ntargets + 1, sizeof(*ctl->targets));
	t = &ctl->targets[ctl->ntargets++];
	memset(t, 0, sizeof(*t));
	t->pid = (pid_t) pid;
	t->pidfd = (int) fd;
	t->procfd = -1;
}

/* --cgroup DIR: every process in it (and below it, with --recursive) but pmadvise. */
static void add_cgroup(struct pmadvise *ctl, const char *dir)
{
	struct pid_list list = { NULL, 0, 0 };
	const char *why = NULL;
	char *where = NULL;
	size_t i, found = 0;

	int rc = cgroup_read_pids(dir, ctl->recursive, &list, &why, &where);

	if (rc != 0) {
		bool said = rc == -ENOENT || rc == -ENOTDIR || rc == -EINVAL || rc == -ENOMEM;

		if (where && strcmp(where, dir) != 0)
			errx(EXIT_FAILURE, "--cgroup %s: %s: %s%s%s", dir, where, why,
			     said ? "" : ": ", said ? "" : strerror(-rc));
		errx(EXIT_FAILURE, "--cgroup %s: %s%s%s", dir, why,
		     said ? "" : ": ", said ? "" : strerror(-rc));
	}
	free(where);
	for (i = 0; i < list.count; i++) {
		size_t before = ctl->ntargets;
		struct target *t;

		if (list.pids[i] == getpid())
			continue;
		found++;
		t = new_target(ctl, list.pids[i]);
		/* a process also named with --pid or --pidfd is held to their rules */
		if (ctl->ntargets > before)
			t->from_cgroup = true;
	}
	pid_list_free(&list);
	if (!found)
		errx(EXIT_FAILURE, "--cgroup %s: no process in it%s", dir,
		     ctl->recursive ? " or below it" : " (use --recursive for the cgroups below it)");
}

static bool has_targets(const struct pmadvise *ctl)
{
	return ctl->npid_args || ctl->npidfd_args || ctl->ncgroup_args;
}

/* --pidfd targets first, then --pid ones, then the cgroups', in the order given. */
static void add_targets(struct pmadvise *ctl)
{
	size_t i;

	for (i = 0; i < ctl->npidfd_args; i++)
		add_pidfd(ctl, ctl->pidfd_args[i]);
	for (i = 0; i < ctl->npid_args; i++)
		add_pid(ctl, ctl->pid_args[i]);
	for (i = 0; i < ctl->ncgroup_args; i++)
		add_cgroup(ctl, ctl->cgroup_args[i]);
}

static int read_target_maps(struct target *t)
{
	size_t alloc = 0;
	char *line, *next;

	t->maps_text = read_proc_file(t->procfd, "maps", NULL);
	if (!t->maps_text)
		return -errno;
	for (line = t->maps_text; *line; line = next) {
		const char *why = NULL;

		next = line + strcspn(line, "\n");
		if (*next)
			*next++ = '\0';
		if (t->nmaps == alloc) {
			alloc = alloc ? alloc * 2 : 256;
			t->maps = xreallocarray(t->maps, alloc, sizeof(*t->maps));
		}
		if (parse_maps_line(line, &t->maps[t->nmaps], &why) != 0)
			errx(EXIT_FAILURE, "PID %d: cannot parse /proc/%d/maps: %s: '%s'",
			     (int) t->pid, (int) t->pid, why, line);
		t->nmaps++;
	}
	return 0;
}

/*
 * Selection
 */
static struct piece *new_piece(struct target *t, uint64_t start, uint64_t end,
			       const struct maps_entry *mapping)
{
	struct piece *pc;

	if (t->npieces % 256 == 0)
		t->pieces = xreallocarray(t->pieces, t->npieces + 256, sizeof(*t->pieces));
	pc = &t->pieces[t->npieces++];
	memset(pc, 0, sizeof(*pc));
	pc->start = start;
	pc->end = end;
	pc->mapping = mapping;
	pc->status = ST_PENDING;
	if (!mapping) {
		pc->status = ST_UNMAPPED;
		pc->error = ENOMEM;
		pc->reason = "nothing is mapped here";
	}
	return pc;
}

static bool wanted_mapping(const struct pmadvise *ctl, const struct maps_entry *m)
{
	size_t i;

	if (ctl->nselects) {
		for (i = 0; i < ctl->nselects; i++)
			if (selector_matches(&ctl->selects[i], m))
				break;
		if (i == ctl->nselects)
			return false;
	}
	for (i = 0; i < ctl->nexcludes; i++)
		if (selector_matches(&ctl->excludes[i], m))
			return false;
	return true;
}

/* The first mapping that ends above addr. */
static size_t first_mapping_after(const struct target *t, uint64_t addr)
{
	size_t lo = 0, hi = t->nmaps;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (t->maps[mid].end <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static void select_range(struct pmadvise *ctl, struct target *t, const struct range *r)
{
	uint64_t start = r->start, end = r->end, at;
	size_t i = first_mapping_after(t, start);

	if (r->form == RANGE_MAPPING) {
		if (i < t->nmaps && t->maps[i].start <= start) {
			const struct maps_entry *m = &t->maps[i];

			if (wanted_mapping(ctl, m))
				new_piece(t, m->start, m->end, m);
		} else {
			start &= ~(ctl->page_size - 1);
			new_piece(t, start, start + ctl->page_size, NULL);
		}
		return;
	}

	for (at = start; at < end; i++) {
		const struct maps_entry *m = i < t->nmaps ? &t->maps[i] : NULL;
		uint64_t piece_end;

		if (!m || m->start >= end) {
			new_piece(t, at, end, NULL);
			break;
		}
		if (m->start > at) {
			new_piece(t, at, m->start, NULL);
			at = m->start;
		}
		piece_end = m->end < end ? m->end : end;
		if (wanted_mapping(ctl, m))
			new_piece(t, at, piece_end, m);
		at = piece_end;
	}
}

/* Where a range rule applies in this target; false if nowhere. */
static bool rule_span(const struct pmadvise *ctl, const struct target *t,
		      const struct rule *rule, uint64_t *start, uint64_t *end)
{
	if (rule->range.form == RANGE_MAPPING) {
		size_t i = first_mapping_after(t, rule->range.start);

		if (i == t->nmaps || t->maps[i].start > rule->range.start) {
			*start = rule->range.start & ~(ctl->page_size - 1);
			*end = *start + ctl->page_size;
			return false;
		}
		*start = t->maps[i].start;
		*end = t->maps[i].end;
		return true;
	}
	*start = rule->range.start;
	*end = rule->range.end;
	return true;
}

static void add_rule_piece(struct pmadvise *ctl, struct target *t, const struct piece *from,
			   uint64_t start, uint64_t end, size_t r, bool selected)
{
	struct piece *pc = new_piece(t, start, end, from->mapping);

	pc->advice = &ctl->rules[r].advice;
	pc->rule = r + 1;
	pc->selected = selected;
	ctl->rules[r].matches++;
}

/*
 * [start, end) of a candidate piece takes the advice of the first rule from
 * `r` on that selects it; a range rule splits it, and the parts outside the
 * range go on to the later rules.
 */
static void assign_rules(struct pmadvise *ctl, struct target *t, const struct piece *from,
			 uint64_t start, uint64_t end, size_t r)
{
	for (; r < ctl->nrules; r++) {
		const struct rule *rule = &ctl->rules[r];
		uint64_t rs, re;

		if (!rule->is_range) {
			if (selector_matches(&rule->sel, from->mapping)) {
				add_rule_piece(ctl, t, from, start, end, r, from->selected);
				return;
			}
			continue;
		}
		if (!rule_span(ctl, t, rule, &rs, &re) || re <= start || rs >= end)
			continue;
		if (start < rs)
			assign_rules(ctl, t, from, start, rs, r + 1);
		add_rule_piece(ctl, t, from, rs > start ? rs : start, re < end ? re : end, r, false);
		if (re < end)
			assign_rules(ctl, t, from, re, end, r + 1);
		return;
	}
}

static int piece_cmp(const void *a, const void *b)
{
	const struct piece *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->rule < y->rule ? -1 : x->rule > y->rule;
}

static void add_rule_hole(struct target *t, uint64_t start, uint64_t end,
			  const struct rule *rule, size_t r)
{
	struct piece *pc = new_piece(t, start, end, NULL);

	pc->advice = &rule->advice;
	pc->rule = r + 1;
}

/* The unmapped parts of range rules, as rows (only where nothing bounds the rules). */
static void add_rule_holes(struct pmadvise *ctl, struct target *t)
{
	size_t r;

	for (r = 0; r < ctl->nrules; r++) {
		const struct rule *rule = &ctl->rules[r];
		uint64_t rs, re, at;
		size_t i;

		if (!rule->is_range)
			continue;
		if (!rule_span(ctl, t, rule, &rs, &re)) {
			add_rule_hole(t, rs, re, rule, r);
			continue;
		}
		for (at = rs, i = first_mapping_after(t, rs); at < re; i++) {
			uint64_t next = i < t->nmaps && t->maps[i].start < re ? t->maps[i].start : re;

			if (next > at)
				add_rule_hole(t, at, next, rule, r);
			if (i >= t->nmaps || next >= re)
				break;
			at = t->maps[i].end;
		}
	}
}

static void apply_rules(struct pmadvise *ctl, struct target *t)
{
	struct piece *candidates = t->pieces;
	size_t ncandidates = t->npieces, i;

	t->pieces = NULL;
	t->npieces = 0;
	for (i = 0; i < ncandidates; i++) {
		const struct piece *c = &candidates[i];

		if (c->mapping)
			assign_rules(ctl, t, c, c->start, c->end, 0);
		else {
			struct piece *hole = new_piece(t, c->start, c->end, NULL);

			*hole = *c;
			hole->advice = NULL;
		}
	}
	free(candidates);
	if (!ctl->nranges && !ctl->nselects)
		add_rule_holes(ctl, t);
	if (t->npieces > 1)
		qsort(t->pieces, t->npieces, sizeof(*t->pieces), piece_cmp);
}

static void select_pieces(struct pmadvise *ctl, struct target *t)
{
	size_t i;

	if (ctl->nranges) {
		for (i = 0; i < ctl->nranges; i++)
			select_range(ctl, t, &ctl->ranges[i]);
	} else {
		for (i = 0; i < t->nmaps; i++) {
			const struct maps_entry *m = &t->maps[i];

			if (is_special_mapping(m) || !wanted_mapping(ctl, m))
				continue;
			new_piece(t, m->start, m->end, m)->selected = true;
		}
	}
	for (i = 0; i < t->npieces; i++)
		t->pieces[i].advice = &ctl->advice;
	if (ctl->nrules)
		apply_rules(ctl, t);
}

static char *describe_selection(const struct pmadvise *ctl)
{
	size_t len = 0, i;
	char *text = NULL;
	FILE *f = open_memstream(&text, &len);

	if (!f)
		err(EXIT_FAILURE, "cannot allocate memory");
	if (ctl->nranges)
		fprintf(f, "%zu range%s", ctl->nranges, ctl->nranges == 1 ? "" : "s");
	for (i = 0; i < ctl->nselects; i++)
		fprintf(f, "%s--select '%s'", ftell(f) ? " " : "", ctl->selects[i].text);
	for (i = 0; i < ctl->nexcludes; i++)
		fprintf(f, "%s--exclude '%s'", ftell(f) ? " " : "", ctl->excludes[i].text);
	for (i = 0; i < ctl->nrules; i++)
		fprintf(f, "%s--rule '%s'", ftell(f) ? " " : "", ctl->rules[i].text);
	fclose(f);
	return text;
}

/*
 * The syscall engine
 */
static const char *reason_for(int error)
{
	switch (error) {
	case EINVAL:
		return "the kernel does not take this advice for this mapping "
		       "(locked, PFN/IO, hugetlb or not eligible)";
	case ENOMEM:
		return "not mapped any more";
	case EAGAIN:
		return "the kernel stayed busy: try again";
	case EINTR:
		return "interrupted again and again";
	case ESRCH:
		return "process has exited";
	case EPERM:
		return "advising another process needs CAP_SYS_NICE";
	case EACCES:
		return "no ptrace read access to the process";
	case ENOSYS:
		return "process_madvise needs Linux 5.10 or later";
	case ECANCELED:
		return stop_reason(stop_signal);
	default:
		return strerror(error);
	}
}

static void finish_piece(struct piece *pc, int error)
{
	pc->error = error;
	pc->reason = reason_for(error);
	if (pc->advised)
		pc->status = ST_PARTIAL;
	else if (error == EINVAL && pc->selected)
		pc->status = ST_SKIPPED;
	else
		pc->status = ST_FAILED;
}

/* Errors after which nothing more can be done for this target. */
static bool is_fatal_for_target(int error)
{
	return error == ESRCH || error == EPERM || error == EACCES
	    || error == ENOSYS || error == EBADF;
}

static void stop_target(struct target *t, int error)
{
	size_t i;

	t->error = error;
	for (i = 0; i < t->npieces; i++) {
		struct piece *pc = &t->pieces[i];

		if (pc->status != ST_PENDING)
			continue;
		pc->error = error;
		pc->reason = reason_for(error);
		pc->status = pc->advised ? ST_PARTIAL : ST_NOT_RUN;
	}
}

/* Where the next call starts: a piece, and how far into it. */
struct cursor {
	size_t piece;
	uint64_t offset;
};

/* Rows still to advise with this advice. */
static bool is_due(const struct piece *pc, const struct advice *advice)
{
	return pc->status == ST_PENDING && pc->advice->value == advice->value;
}

static void skip_done(const struct target *t, const struct advice *advice, struct cursor *c)
{
	while (c->piece < t->npieces && !is_due(&t->pieces[c->piece], advice)) {
		c->piece++;
		c->offset = 0;
	}
}

/*
 * Fills one call: at most BATCH_MAX_ENTRIES iovecs and MAX_RW_COUNT bytes in
 * all.  A piece too large for what is left is split; its row stays one.
 */
static size_t fill_batch(const struct pmadvise *ctl, const struct target *t,
			 const struct advice *advice, struct cursor c,
			 struct iovec *iov, size_t *owner, uint64_t *total)
{
	uint64_t room = MAX_RW_COUNT & ~(ctl->page_size - 1);
	size_t n = 0;

	*total = 0;
	while (n < BATCH_MAX_ENTRIES && c.piece < t->npieces && room) {
		const struct piece *pc = &t->pieces[c.piece];
		uint64_t len;

		if (!is_due(pc, advice)) {
			c.piece++;
			c.offset = 0;
			continue;
		}
		len = pc->end - pc->start - c.offset;
		if (len > room)
			len = room;
		iov[n].iov_base = (void *) (uintptr_t) (pc->start + c.offset);
		iov[n].iov_len = (size_t) len;
		owner[n] = c.piece;
		n++;
		room -= len;
		*total += len;
		c.offset += len;
		if (c.offset == pc->end - pc->start) {
			c.piece++;
			c.offset = 0;
		}
	}
	return n;
}

/* Books the first `done` bytes of a call; returns the cursor after them. */
static struct cursor account_done(struct target *t, struct cursor c,
				  const struct iovec *iov, const size_t *owner,
				  size_t n, uint64_t done)
{
	size_t i;

	for (i = 0; i < n && done >= iov[i].iov_len; i++) {
		struct piece *pc = &t->pieces[owner[i]];

		done -= iov[i].iov_len;
		pc->advised += iov[i].iov_len;
		if (pc->advised == pc->end - pc->start) {
			pc->status = ST_OK;
			c.piece = owner[i] + 1;
			c.offset = 0;
		} else {
			/* a chunked piece goes on where this call left it */
			c.piece = owner[i];
			c.offset = pc->advised;
		}
	}
	return c;
}

static void report_target_error(struct pmadvise *ctl, struct target *t,
				const struct advice *advice, int error);

static void note_progress(struct pmadvise *ctl, uint64_t advised)
{
	ctl->advised_bytes += advised;
	progress_update(&ctl->progress, ctl->targets_done, ctl->ntargets,
			ctl->advised_bytes, ctl->selected_bytes);
}

static void advise_target(struct pmadvise *ctl, struct target *t, const struct advice *advice)
{
	static struct iovec iov[BATCH_MAX_ENTRIES];
	static size_t owner[BATCH_MAX_ENTRIES];
	struct cursor c = { 0, 0 };
	unsigned int retries = 0;

	for (;;) {
		uint64_t total;
		ssize_t ret;
		size_t n;

		/* a stop request is honoured between calls, never inside one's books */
		if (stop_signal) {
			stop_target(t, ECANCELED);
			break;
		}
		skip_done(t, advice, &c);
		n = fill_batch(ctl, t, advice, c, iov, owner, &total);
		if (n == 0)
			break;

		ret = sys_process_madvise(t->pidfd, iov, n, advice->value);
		if (ret > 0)
			note_progress(ctl, (uint64_t) ret < total ? (uint64_t) ret : total);
		if (ret >= 0 && (uint64_t) ret >= total) {
			c = account_done(t, c, iov, owner, n, total);
			retries = 0;
			continue;
		}
		if (ret > 0) {
			/*
			 * A short count is the bytes of the iovecs done before
			 * the first that failed; the next call starts at that
			 * one and, failing first, tells its errno.
			 */
			struct cursor before = c;

			c = account_done(t, c, iov, owner, n, (uint64_t) ret);
			if (c.piece != before.piece || c.offset != before.offset) {
				retries = 0;
				continue;
			}
		}
		if (ret >= 0 || errno == EAGAIN || errno == EINTR) {
			/* no progress: a busy kernel, or a count that ends inside an iovec */
			int error = ret >= 0 ? EAGAIN : errno;

			if (++retries < MAX_RETRIES)
				continue;
			finish_piece(&t->pieces[c.piece], error);
			retries = 0;
			continue;
		}
		if (is_fatal_for_target(errno)) {
			int error = errno;

			report_target_error(ctl, t, advice, error);
			stop_target(t, error);
			break;
		}
		/* the first iovec failed: its row fails, the rest go on */
		finish_piece(&t->pieces[c.piece], errno);
		retries = 0;
	}
}

static void report_target_error(struct pmadvise *ctl, struct target *t,
				const struct advice *advice, int error)
{
	const char *name = advice->name;

	if (exit_is_expected(t, error))
		return;
	progress_clear(&ctl->progress);
	switch (error) {
	case EACCES:
		warnx("PID %d: permission denied: no ptrace read access to this process "
		      "(run as its user, or with CAP_SYS_PTRACE)", (int) t->pid);
		break;
	case EPERM:
		warnx("PID %d: operation not permitted: advising another process needs "
		      "CAP_SYS_NICE (run as root or grant the capability)", (int) t->pid);
		break;
	case ESRCH:
		warnx("PID %d: process has exited", (int) t->pid);
		break;
	case ENOSYS:
		warnx("process_madvise is not available: pmadvise needs Linux 5.10 or "
		      "later with CONFIG_ADVISE_SYSCALLS");
		break;
	case EINVAL:
		if (advice->info && !advice->info->remote_since)
			warnx("PID %d: this kernel does not support remote KSM hints: it refuses "
			      "'%s' for another process. Start the program as "
			      "'pmadvise %s -- COMMAND' instead",
			      (int) t->pid, name, name);
		else if (advice->info)
			warnx("PID %d: this kernel does not accept '%s' for another process "
			      "(needs Linux %s or later)", (int) t->pid, name,
			      advice->info->remote_since);
		else
			warnx("PID %d: this kernel does not accept advice %d for another process",
			      (int) t->pid, advice->value);
		break;
	default:
		warnx("PID %d: %s", (int) t->pid, strerror(error));
		break;
	}
}

/*
 * A call with no iovecs checks what the kernel thinks of this target and
 * advice (ENOSYS, EACCES, EPERM, ESRCH, EINVAL) before any range is touched.
 */
static int probe_target(struct pmadvise *ctl, struct target *t, const struct advice *advice)
{
	struct iovec none = { NULL, 0 };
	int error;
	size_t i;

	if (sys_process_madvise(t->pidfd, &none, 0, advice->value) >= 0)
		return 0;
	error = errno;
	if (exit_is_expected(t, error)) {
		/* gone from its cgroup before anything was tried: its rows say so */
		stop_target(t, error);
		return -1;
	}
	if (error == EINVAL || error == ENOSYS)
		ctl->unsupported = true;
	report_target_error(ctl, t, advice, error);
	if (error == EINVAL && ctl->nrules) {
		/* one rule's advice refused: the other rules go on */
		for (i = 0; i < t->npieces; i++) {
			struct piece *pc = &t->pieces[i];

			if (is_due(pc, advice)) {
				pc->status = ST_NOT_RUN;
				pc->error = EINVAL;
				pc->reason = "this kernel does not take this advice for another process";
			}
		}
		return 1;
	}
	/* nothing was tried: the message says it all, no rows needed */
	t->error = error;
	t->npieces = 0;
	return -1;
}

static bool has_due(const struct target *t, const struct advice *advice)
{
	size_t i;

	for (i = 0; i < t->npieces; i++)
		if (is_due(&t->pieces[i], advice))
			return true;
	return false;
}

/* A probe and a batched pass for each advice, in the order of the rules. */
static int advise_all(struct pmadvise *ctl, struct target *t)
{
	size_t r, earlier;

	if (!ctl->nrules) {
		if (probe_target(ctl, t, &ctl->advice) != 0)
			return -1;
		advise_target(ctl, t, &ctl->advice);
		return 0;
	}
	for (r = 0; r < ctl->nrules && !t->error; r++) {
		const struct advice *advice = &ctl->rules[r].advice;
		int rc;

		for (earlier = 0; earlier < r; earlier++)
			if (ctl->rules[earlier].advice.value == advice->value)
				break;
		if (earlier < r || !has_due(t, advice))
			continue;
		rc = probe_target(ctl, t, advice);
		if (rc < 0)
			return -1;
		if (rc == 0)
			advise_target(ctl, t, advice);
	}
	return 0;
}

static void warn_failed_rows(struct pmadvise *ctl, const struct target *t)
{
	size_t i;

	if (t->error)
		return;
	progress_clear(&ctl->progress);
	for (i = 0; i < t->npieces; i++) {
		const struct piece *pc = &t->pieces[i];

		if (pc->status == ST_FAILED || pc->status == ST_PARTIAL)
			warnx("PID %d: %" PRIx64 "-%" PRIx64 ": %s %s: %s",
			      (int) t->pid, pc->start, pc->end, pc->advice->name,
			      pc->status == ST_PARTIAL ? "stopped part way" : "failed",
			      pc->reason);
		else if (pc->status == ST_UNMAPPED)
			warnx("PID %d: %" PRIx64 "-%" PRIx64 ": nothing is mapped there",
			      (int) t->pid, pc->start, pc->end);
	}
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

	for (i = 0; i < t->npieces; i++)
		if (t->pieces[i].mapping)
			spans[n++] = (struct span) { t->pieces[i].start, t->pieces[i].end };
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
	for (i = 0; i < t->npieces; i++) {
		struct piece *pc = &t->pieces[i];

		if (!pc->mapping)
			continue;
		page_scan_sum(&t->scan, pc->start, pc->end, after ? &pc->after : &pc->before);
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
	for (i = 0; i < t->npieces; i++) {
		struct piece *pc = &t->pieces[i];
		const struct smaps_fields *f;

		/* smaps speaks of whole mappings only */
		if (!pc->mapping || pc->start != pc->mapping->start || pc->end != pc->mapping->end)
			continue;
		f = find_smaps_fields(fields, nfields, pc->start);
		if (!f || f->end != pc->end)
			continue;
		if (after)
			pc->referenced_after = f->referenced;
		else
			pc->referenced = f->referenced;
		pc->ksm = f->ksm;
		pc->has_ksm = f->has_ksm;
		pc->measured |= after ? MEASURED_SMAPS_AFTER : MEASURED_SMAPS;
	}
	free(fields);
}

static void measure_target(struct pmadvise *ctl, struct target *t, bool after)
{
	if (after && (ctl->dry_run || !(ctl->needs & NEED_AFTER)))
		return;
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

/* Empty where the row was not measured (a hole, or a part of a mapping for smaps). */
static char *measured_size(const struct pmadvise *ctl, const struct piece *pc,
			   unsigned int which, uint64_t bytes)
{
	return pc->measured & which ? format_size(ctl, bytes) : NULL;
}

static char *measured_delta(const struct pmadvise *ctl, const struct piece *pc,
			    uint64_t before, uint64_t after)
{
	const unsigned int both = MEASURED_PAGES | MEASURED_PAGES_AFTER;
	uint64_t diff = after >= before ? after - before : before - after;
	char *text, *signed_text;

	if ((pc->measured & both) != both)
		return NULL;
	if (diff == 0)
		return xstrdup("0");
	text = format_size(ctl, diff);
	/* a JSON number takes no '+' */
	if (ctl->bytes && after >= before)
		return text;
	signed_text = xasprintf("%c%s", after >= before ? '+' : '-', text);
	free(text);
	return signed_text;
}

static char *cell_data(const struct pmadvise *ctl, const struct target *t,
		       const struct piece *pc, int col)
{
	const struct maps_entry *m = pc->mapping;

	switch (col) {
	case COL_PID:
		return xasprintf("%d", (int) t->pid);
	case COL_COMM:
		return xstrdup(t->comm);
	case COL_START:
		return xasprintf("%" PRIx64, pc->start);
	case COL_END:
		return xasprintf("%" PRIx64, pc->end);
	case COL_SIZE:
		return format_size(ctl, pc->end - pc->start);
	case COL_PERMS:
		return m ? xstrdup(m->perms) : NULL;
	case COL_OFFSET:
		return m ? xasprintf("%" PRIx64, m->offset + (pc->start - m->start)) : NULL;
	case COL_DEVICE:
		return m ? xasprintf("%02x:%02x", m->dev_major, m->dev_minor) : NULL;
	case COL_INODE:
		return m ? xasprintf("%" PRIu64, m->inode) : NULL;
	case COL_PATH:
		return m && *m->path ? xstrdup(m->path) : NULL;
	case COL_ADVICE:
		return pc->advice ? xstrdup(pc->advice->name) : NULL;
	case COL_RULE:
		return pc->rule ? xasprintf("%zu", pc->rule) : NULL;
	case COL_ADVISED:
		return format_size(ctl, pc->advised);
	case COL_STATUS:
		return xstrdup(status_names[pc->status]);
	case COL_ERRNO:
		return pc->error ? xstrdup(strerrorname_np(pc->error) ? strerrorname_np(pc->error) : "?")
				 : NULL;
	case COL_REASON:
		return pc->reason ? xstrdup(pc->reason) : NULL;
	case COL_RSS:
		return measured_size(ctl, pc, MEASURED_PAGES, pc->before.rss);
	case COL_RSS_AFTER:
		return measured_size(ctl, pc, MEASURED_PAGES_AFTER, pc->after.rss);
	case COL_RSS_DELTA:
		return measured_delta(ctl, pc, pc->before.rss, pc->after.rss);
	case COL_SWAP:
		return measured_size(ctl, pc, MEASURED_PAGES, pc->before.swap);
	case COL_SWAP_AFTER:
		return measured_size(ctl, pc, MEASURED_PAGES_AFTER, pc->after.swap);
	case COL_HUGE:
		return measured_size(ctl, pc, MEASURED_PAGES, pc->before.huge);
	case COL_HUGE_AFTER:
		return measured_size(ctl, pc, MEASURED_PAGES_AFTER, pc->after.huge);
	case COL_REFERENCED:
		return measured_size(ctl, pc, MEASURED_SMAPS, pc->referenced);
	case COL_REFERENCED_AFTER:
		return measured_size(ctl, pc, MEASURED_SMAPS_AFTER, pc->referenced_after);
	case COL_KSM:
		if (!pc->has_ksm)
			return NULL;
		return measured_size(ctl, pc, MEASURED_SMAPS | MEASURED_SMAPS_AFTER, pc->ksm);
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

static void print_table(const struct pmadvise *ctl, const char *json_extra)
{
	struct libscols_table *tb = new_table(ctl, "pmadvise");
	size_t i, j, k;

	for (i = 0; i < ctl->ncolumns; i++) {
		const struct colinfo *ci = &infos[ctl->columns[i]];
		struct libscols_column *cl;

		cl = scols_table_new_column(tb, ci->name, ci->whint, ci->flags);
		if (!cl)
			err(EXIT_FAILURE, "cannot create a column");
		if (ctl->json)
			scols_column_set_json_type(cl, json_type_of(ctl, ctl->columns[i]));
	}
	for (i = 0; i < ctl->ntargets; i++) {
		const struct target *t = &ctl->targets[i];

		for (j = 0; j < t->npieces; j++) {
			struct libscols_line *ln = scols_table_new_line(tb, NULL);

			if (!ln)
				err(EXIT_FAILURE, "cannot create a table line");
			for (k = 0; k < ctl->ncolumns; k++) {
				char *data = cell_data(ctl, t, &t->pieces[j], ctl->columns[k]);

				if (data && scols_line_refer_data(ln, k, data) != 0)
					err(EXIT_FAILURE, "cannot fill the table");
			}
		}
	}
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
	} else {
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
		tt->before.rss += pc->before.rss;
		tt->before.swap += pc->before.swap;
		tt->after.rss += pc->after.rss;
		tt->after.swap += pc->after.swap;
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
	if (t->gone)
		return "exited before it was advised";
	if (t->none_selected)
		return "nothing selected";
	return "not advised (see the message above)";
}

static void print_summary(const struct pmadvise *ctl)
{
	struct totals tt;
	size_t i;

	fflush(stdout);		/* after the table, not inside it */
	for (i = 0; summary_per_target(ctl) && i < ctl->ntargets; i++) {
		const struct target *t = &ctl->targets[i];
		char *label = xasprintf("PID %d (%s)%s", (int) t->pid, t->comm,
					t->gone && t->npieces ? ", exited" : "");

		if (no_rows_reason(t)) {
			fprintf(stderr, "%s: %s\n", label, no_rows_reason(t));
		} else {
			memset(&tt, 0, sizeof(tt));
			tt.measured = ctl->needs & NEED_PAGES;
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
			tt.measured = ctl->needs & NEED_PAGES;
			count_target(t, &tt);
			members = totals_json(ctl, &tt);
			fprintf(out, "%s{\"pid\": %d, \"comm\": \"%s\", \"exited\": %s, ",
				i ? ", " : "", (int) t->pid, comm, t->gone ? "true" : "false");
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
	size_t i, j, failures = 0;
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
			if (errno == ENOENT)
				warnx("PID %d: this kernel has no /proc/PID/ksm_stat (Linux 6.1 or later)",
				      (int) t->pid);
			else
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
	return failures == ctl->ntargets ? EXIT_FAILURE : EXIT_SOME_FAILED;
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
			errx(EXIT_NOT_SUPPORTED, "this kernel has no PR_SET_MEMORY_MERGE: "
			     "launcher mode needs Linux 6.4 or later with CONFIG_KSM");
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

		warn("failed to execute %s", argv[0]);
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

static int exit_status(const struct pmadvise *ctl, size_t target_failures)
{
	struct totals tt;
	size_t failed;

	/* a stop asked for by the user or --timeout wins: the table says what got done */
	if (stop_signal)
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
		free(t->maps_text);
		free(t->maps);
		free(t->pieces);
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

int main(int argc, char **argv)
{
	enum {
		OPT_DRY_RUN = CHAR_MAX + 1, OPT_OUTPUT_ALL, OPT_SUMMARY, OPT_KSM_STATUS,
		OPT_RECURSIVE, OPT_PROGRESS, OPT_NO_PROGRESS, OPT_TIMEOUT
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
		case OPT_PROGRESS:
			progress = 1;
			break;
		case OPT_NO_PROGRESS:
			progress = 0;
			break;
		case OPT_TIMEOUT: {
			const char *why = NULL;

			if (parse_duration(optarg, &timeout, &why) != 0)
				errx(EXIT_FAILURE, "invalid --timeout '%s': %s", optarg, why);
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
		/* with rules, rows differ in advice: show it (and the rule under --dry-run) */
		if (ctl.nrules && default_columns[i] == COL_ADVISED) {
			add_column(&ctl, COL_ADVICE);
			if (ctl.dry_run)
				add_column(&ctl, COL_RULE);
		}
		add_column(&ctl, default_columns[i]);
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
			     "names its own (SELECTOR=ADVICE)", argv[optind]);
		if (!has_targets(&ctl))
			errx(EXIT_FAILURE, "--rule needs a target: use --pid, --pidfd or --cgroup");
	} else {
		if (optind >= nopts)
			errx(EXIT_FAILURE, "no advice given (try 'pmadvise --help')");
		parse_advice(&ctl.advice, argv[optind++], "");
	}

	if (ctl.recursive && !ctl.ncgroup_args)
		errx(EXIT_FAILURE, "--recursive goes with --cgroup");
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

		rc = t->pidfd >= 0 ? pin_target(t, t->pidfd) : open_target(t);
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
			warnx("--rule '%s' selects nothing", ctl.rules[i].text);
	if (!has_rows(&ctl)) {
		if (ctl.ncgroup_args && target_failures == 0 && maps_read) {
			char *what = describe_selection(&ctl);

			warnx("nothing selected by %s in any process", what);
			free(what);
		} else if (ctl.ncgroup_args && target_failures == 0) {
			warnx("every process of the cgroup has exited: nothing to advise");
		}
		if (ctl.summary)
			print_summary(&ctl);
		return EXIT_FAILURE;
	}

	progress_init(&ctl.progress, progress == 1 || (progress == -1 && !ctl.quiet
				     && !ctl.json && !ctl.dry_run && isatty(STDERR_FILENO)));
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
		if (advise_all(&ctl, t) == 0)
			measure_target(&ctl, t, true);
		else if (!t->gone)
			target_failures++;
		warn_failed_rows(&ctl, t);
	}
	progress_clear(&ctl.progress);
	if (stop_signal)
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
