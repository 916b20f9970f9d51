/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What the parts of pmadvise share: the advice, the rows (pieces), the
 * targets and the control struct of a run.  pmadvise.c is the program;
 * target.c pins the processes, select.c chooses their pieces, engine.c
 * advises them, util.c has the small helpers.
 */
#ifndef PMADVISE_H
#define PMADVISE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "measure.h"
#include "parse.h"
#include "progress.h"

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

struct advice_info {
	const char *name;
	int value;
	const char *remote_since;	/* NULL: mainline never took it remotely */
	const char *effect;
};

/* The advice chosen for a run or a rule. */
struct advice {
	const struct advice_info *info;	/* NULL for a bare number the table lacks */
	int value;
	const char *name;
};

/* Output columns */
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

/* What a column needs measured; nothing is read that no column needs. */
enum {
	NEED_PAGES  = 1 << 0,		/* pagemap, before the advice */
	NEED_SMAPS  = 1 << 1,		/* smaps, before the advice */
	NEED_AFTER  = 1 << 2		/* the same again after it */
};

/* Rows and targets */
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

/* One row: a part of one mapping, or a hole in an explicit range. */
struct piece {
	uint64_t start;
	uint64_t end;
	const struct maps_entry *mapping;	/* NULL for a hole */
	uint64_t advised;			/* bytes done so far */
	const char *reason;
	const struct advice *advice;
	enum status status;
	int error;				/* errno, 0 if none */
	unsigned int rule;			/* 1-based --rule, 0 without rules */
	uint8_t measured;			/* MEASURED_* done for this row */
	bool selected;				/* by --select/--exclude alone */
	bool whole_process;			/* --inject prctl row: no addresses */
};	/* 64 bytes: one row per mapping, 60 000 of them on some processes */

/*
 * What was measured of a piece.  Kept out of struct piece (in
 * target->measures, by piece index) and allocated only when a column or
 * --summary asks for it: a row stays small on a process with many mappings.
 */
struct piece_measure {
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
	char *maps_paths;		/* the maps entries' paths (see read_target_maps) */
	struct maps_entry *maps;
	size_t nmaps;
	struct piece *pieces;
	size_t npieces;
	struct piece_measure *measures;	/* one per piece, NULL when nothing is measured */
	size_t nmeasures;
	int error;			/* fatal for this target, 0 if none */
	bool from_cgroup;		/* found by --cgroup, not named */
	bool gone;			/* from a cgroup, and exited (or never had memory) */
	bool kernel_thread;		/* a kernel thread: no user memory at all */
	bool none_selected;		/* the selection picked nothing in it */
	struct page_scan scan;		/* open while measuring */
	bool scan_open;
	bool huge_unknown;		/* its huge pages could not be seen */
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
	bool enosys_said;		/* the ENOSYS message was given */
	bool inject;			/* --inject: the target makes the call itself */
	unsigned int needs;		/* NEED_* of the columns and --summary */

	const char **pid_args;		/* --pid and --pidfd as given */
	size_t npid_args;
	const char **pidfd_args;
	size_t npidfd_args;
	const char **cgroup_args;	/* --cgroup DIRs */
	size_t ncgroup_args;
	bool recursive;

	bool stopped;			/* a stop request left work undone */
	struct progress progress;
	uint64_t selected_bytes;	/* of every target, for the progress line */
	uint64_t advised_bytes;
	size_t targets_done;
};

/* util.c */
extern void *xmalloc(size_t size);
extern void *xcalloc(size_t nmemb, size_t size);
extern void *xreallocarray(void *ptr, size_t nmemb, size_t size);
extern char *xstrdup(const char *s);
extern char *xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
extern char *read_proc_file(int dirfd, const char *name, size_t *len);
extern int sys_pidfd_open(pid_t pid);
extern int sys_pidfd_send_signal(int pidfd, int sig);
extern ssize_t sys_process_madvise(int pidfd, const struct iovec *iov,
				   size_t n, int advice);

/* target.c */
extern bool exit_is_expected(struct target *t, int error);
extern int pin_target(struct target *t, int pidfd);
extern int open_target(struct target *t);
extern bool has_targets(const struct pmadvise *ctl);
extern void add_targets(struct pmadvise *ctl);
extern int read_target_maps(struct target *t);
extern void free_target_maps(struct target *t);

/* select.c */
extern void select_pieces(struct pmadvise *ctl, struct target *t);
extern char *describe_selection(const struct pmadvise *ctl);

/* engine.c */
extern void stop_target(struct target *t, int error);
extern void report_target_error(struct pmadvise *ctl, struct target *t,
				const struct advice *advice, int error);
extern int advise_all(struct pmadvise *ctl, struct target *t);
extern void explain_refusals(struct target *t);
extern void warn_failed_rows(struct pmadvise *ctl, const struct target *t);
extern bool inject_whole_process(const struct pmadvise *ctl);
extern int inject_all(struct pmadvise *ctl, struct target *t);

#endif
