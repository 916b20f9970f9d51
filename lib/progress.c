/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Progress line and clean stops.  See progress.h.
 */
#ifdef HAVE_CONFIG_H
# include "config.h"
#endif

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

#include "parse.h"
#include "progress.h"

#define EXIT_TIMEOUT	124		/* as timeout(1) */

volatile sig_atomic_t stop_signal;

static double seconds_since(const struct timespec *then, const struct timespec *now)
{
	return (double) (now->tv_sec - then->tv_sec)
	       + (double) (now->tv_nsec - then->tv_nsec) / 1e9;
}

void progress_init(struct progress *p, bool enabled)
{
	memset(p, 0, sizeof(*p));
	p->enabled = enabled;
	clock_gettime(CLOCK_MONOTONIC, &p->start);
}

void progress_update(struct progress *p, size_t targets_done, size_t ntargets,
		     uint64_t advised, uint64_t selected)
{
	char done[HUMAN_SIZE_LEN], all[HUMAN_SIZE_LEN];
	struct timespec now;
	double elapsed;

	if (!p->enabled)
		return;
	clock_gettime(CLOCK_MONOTONIC, &now);
	elapsed = seconds_since(&p->start, &now);
	if (elapsed < PROGRESS_DELAY
	    || (p->shown && seconds_since(&p->last, &now) < PROGRESS_INTERVAL))
		return;
	p->last = now;
	size_to_human(advised, done);
	size_to_human(selected, all);
	/* \r and erase-to-end: the line rewrites itself */
	fprintf(stderr, "\rpmadvise: %zu/%zu processes, %s/%s advised, %.1fs\033[K",
		targets_done, ntargets, done, all, elapsed);
	fflush(stderr);
	p->shown = true;
}

void progress_clear(struct progress *p)
{
	if (!p->shown)
		return;
	fputs("\r\033[K", stderr);
	fflush(stderr);
	p->shown = false;
}

static void on_stop_signal(int sig)
{
	if (stop_signal && sig != SIGALRM) {
		/* asked twice: stop now, the way the signal would have */
		signal(sig, SIG_DFL);
		raise(sig);
		return;
	}
	if (!stop_signal)
		stop_signal = sig;
}

static void catch_signal(int sig)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_stop_signal;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESTART;
	sigaction(sig, &sa, NULL);
}

void catch_stop_signals(void)
{
	struct sigaction old;

	/* a shell starts background jobs with SIGINT ignored: keep it so */
	if (sigaction(SIGINT, NULL, &old) == 0 && old.sa_handler != SIG_IGN)
		catch_signal(SIGINT);
	catch_signal(SIGTERM);
}

int arm_timeout(double seconds)
{
	struct itimerval it;

	if (seconds <= 0)
		return 0;
	catch_signal(SIGALRM);
	memset(&it, 0, sizeof(it));
	it.it_value.tv_sec = (time_t) seconds;
	it.it_value.tv_usec = (suseconds_t) ((seconds - (double) it.it_value.tv_sec) * 1e6);
	if (it.it_value.tv_sec == 0 && it.it_value.tv_usec == 0)
		it.it_value.tv_usec = 1;
	return setitimer(ITIMER_REAL, &it, NULL);
}

void release_stop_signals(void)
{
	struct itimerval off;
	struct sigaction old;

	memset(&off, 0, sizeof(off));
	setitimer(ITIMER_REAL, &off, NULL);
	/* what was ignored at the start stays ignored */
	if (sigaction(SIGINT, NULL, &old) == 0 && old.sa_handler != SIG_IGN)
		signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
}

/* "1.5", "90s", "2m", "1h", "1d": timeout(1)'s form; "0" is no limit. */
int parse_duration(const char *str, double *seconds, const char **why)
{
	double value, scale = 1;
	char *end;

	if (!*str || !(str[0] == '.' || (str[0] >= '0' && str[0] <= '9'))) {
		*why = "not a number of seconds";
		return -EINVAL;
	}
	errno = 0;
	value = strtod(str, &end);
	if (errno || end == str || !isfinite(value)) {
		*why = "not a number of seconds";
		return -EINVAL;
	}
	if (*end) {
		switch (*end) {
		case 's': scale = 1; break;
		case 'm': scale = 60; break;
		case 'h': scale = 3600; break;
		case 'd': scale = 86400; break;
		default:
			*why = "unknown unit (use s, m, h or d)";
			return -EINVAL;
		}
		if (end[1]) {
			*why = "unknown unit (use s, m, h or d)";
			return -EINVAL;
		}
	}
	value *= scale;
	if (value > 1e9) {
		*why = "too long";
		return -ERANGE;
	}
	*seconds = value;
	return 0;
}

int stop_exit_status(int sig)
{
	return sig == SIGALRM ? EXIT_TIMEOUT : 128 + sig;
}

const char *stop_reason(int sig)
{
	switch (sig) {
	case SIGALRM:
		return "stopped: --timeout expired";
	case SIGINT:
		return "stopped: interrupted (SIGINT)";
	case SIGTERM:
		return "stopped: terminated (SIGTERM)";
	default:
		return "stopped";
	}
}
