/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * One self-updating progress line on stderr for long runs, and the clean
 * stop that SIGINT, SIGTERM and --timeout ask for.
 */
#ifndef PMADVISE_PROGRESS_H
#define PMADVISE_PROGRESS_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

struct progress {
	bool enabled;
	bool shown;			/* a line is on stderr now */
	struct timespec start;
	struct timespec last;
};

/* The line appears only once the run has lasted this long. */
#define PROGRESS_DELAY		1.0
#define PROGRESS_INTERVAL	0.2

extern void progress_init(struct progress *p, bool enabled);
extern void progress_update(struct progress *p, size_t targets_done, size_t ntargets,
			    uint64_t advised, uint64_t selected);
extern void progress_clear(struct progress *p);

/*
 * Stop requests.  SIGINT and SIGTERM are caught (unless SIGINT was ignored
 * when pmadvise started, as for a background job); a second one of either
 * ends the program at once.  --timeout arms SIGALRM.
 */
extern volatile sig_atomic_t stop_signal;	/* 0, or the signal that asked to stop */

extern void catch_stop_signals(void);
extern int arm_timeout(double seconds);
/*
 * Once every call is made there is nothing left to stop cleanly: the timer
 * is disarmed (a --timeout that runs out while the table is written is no
 * stop), and SIGINT and SIGTERM end the program as for any other.
 */
extern void release_stop_signals(void);
extern int parse_duration(const char *str, double *seconds, const char **why);

/* Exit status of a run stopped by signal sig: 130, 143, or 124 for --timeout. */
extern int stop_exit_status(int sig);
extern const char *stop_reason(int sig);

#endif
