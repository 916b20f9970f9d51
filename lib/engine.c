/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The syscall engine: batched process_madvise(2) calls and what each row
 * got from them.
 */
#ifdef HAVE_CONFIG_H
# include "config.h"
#endif

#include <ctype.h>
#include <err.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#ifdef HAVE_SYS_PIDFD_H
# include <sys/pidfd.h>
#endif

#include "inject.h"
#include "pmadvise.h"

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

void stop_target(struct target *t, int error)
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

void report_target_error(struct pmadvise *ctl, struct target *t,
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

		skip_done(t, advice, &c);
		n = fill_batch(ctl, t, advice, c, iov, owner, &total);
		if (n == 0)
			break;
		/* a stop request is honoured between calls (with work left), never inside one's books */
		if (stop_signal) {
			stop_target(t, ECANCELED);
			break;
		}

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

void report_target_error(struct pmadvise *ctl, struct target *t,
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
		/* the kernel's, not the target's: once is enough */
		if (!ctl->enosys_said)
			warnx("process_madvise is not available: pmadvise needs Linux 5.10 or "
			      "later with CONFIG_ADVISE_SYSCALLS");
		ctl->enosys_said = true;
		break;
	case EAGAIN:
		warnx("PID %d: the kernel stayed busy (EAGAIN) %d times in a row: try again",
		      (int) t->pid, MAX_RETRIES);
		break;
	case EINTR:
		warnx("PID %d: interrupted (EINTR) %d times in a row: try again",
		      (int) t->pid, MAX_RETRIES);
		break;
	case EINVAL:
		if (advice->info && !advice->info->remote_since)
			warnx("PID %d: this kernel does not support remote KSM hints: it refuses "
			      "'%s' for another process. Start the program as "
			      "'pmadvise %s -- COMMAND' instead, or add --inject to have "
			      "this process make the call itself (see pmadvise(1))",
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
	unsigned int tries = 0;
	int error;
	size_t i;

	/* busy or interrupted: tried again, as the calls with ranges are */
	do {
		if (sys_process_madvise(t->pidfd, &none, 0, advice->value) >= 0)
			return 0;
		error = errno;
	} while ((error == EAGAIN || error == EINTR) && ++tries < MAX_RETRIES);
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
int advise_all(struct pmadvise *ctl, struct target *t)
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

/* What VmFlags says of a mapping the kernel refused (EINVAL); NULL if nothing. */
static const char *refusal_reason(const struct piece *pc, unsigned int vmflags)
{
	if (vmflags & VMF_HUGETLB)
		return "hugetlb memory: the kernel does not take this advice for it";
	if (vmflags & (VMF_PFNMAP | VMF_IO))
		return "device (PFN or I/O) memory: the kernel cannot advise it";
	switch (pc->advice->value) {
	case MADV_COLD:
	case MADV_PAGEOUT:
		/* the kernel leaves locked, PFN and hugetlb mappings off its LRU lists */
		if (vmflags & VMF_LOCKED)
			return "the mapping is locked in memory (mlock): the kernel leaves it alone";
		break;
	case MADV_COLLAPSE:
		return "the kernel cannot collapse this mapping: huge pages need a 2 MiB-aligned "
		       "stretch of anonymous, shmem or read-only file memory";
	}
	return NULL;
}

/*
 * EINVAL alone does not say why: smaps' VmFlags does.  Read only when some
 * row was refused, which is rare and worth the read.
 */
void explain_refusals(struct target *t)
{
	struct smaps_fields *fields = NULL;
	size_t i, nfields = 0;
	bool refused = false;

	for (i = 0; i < t->npieces && !refused; i++)
		refused = t->pieces[i].error == EINVAL && t->pieces[i].mapping;
	if (!refused || read_smaps_fields(t->procfd, &fields, &nfields) != 0)
		return;
	for (i = 0; i < t->npieces; i++) {
		struct piece *pc = &t->pieces[i];
		const struct smaps_fields *f;
		const char *why;

		if (pc->error != EINVAL || !pc->mapping)
			continue;
		f = find_smaps_fields(fields, nfields, pc->mapping->start);
		if (f && (why = refusal_reason(pc, f->vmflags)))
			pc->reason = why;
	}
	free(fields);
}

void warn_failed_rows(struct pmadvise *ctl, const struct target *t)
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
 * --inject: the target makes the KSM call itself (lib/inject.c), for kernels
 * that refuse remote mergeable.  `--select all` alone is one
 * prctl(PR_SET_MEMORY_MERGE), which also covers memory mapped later; anything
 * narrower is one madvise() per piece.
 */
/* Calls per attach: the target is never held for long. */
#define INJECT_CHUNK		1000

/* Signals whose default action would end pmadvise while the target is held. */
static const int inject_held_signals[] = { SIGINT, SIGTERM, SIGALRM, SIGHUP, SIGQUIT };

bool inject_whole_process(const struct pmadvise *ctl)
{
	return ctl->nselects == 1 && strcmp(ctl->selects[0].text, "all") == 0
	       && !ctl->nexcludes && !ctl->nranges && !ctl->nrules;
}

static void hold_stop_signals(bool hold)
{
	sigset_t set;
	size_t i;

	sigemptyset(&set);
	for (i = 0; i < sizeof(inject_held_signals) / sizeof(inject_held_signals[0]); i++)
		sigaddset(&set, inject_held_signals[i]);
	sigprocmask(hold ? SIG_BLOCK : SIG_UNBLOCK, &set, NULL);
}

/* A stop asked for while the signals are held: finish this call, then stop. */
static bool stop_pending(void)
{
	sigset_t pending;
	size_t i;

	if (stop_signal)
		return true;
	if (sigpending(&pending) != 0)
		return false;
	for (i = 0; i < sizeof(inject_held_signals) / sizeof(inject_held_signals[0]); i++)
		if (sigismember(&pending, inject_held_signals[i]))
			return true;
	return false;
}

/* The answer of one injected call, in its row. */
static void book_injected(struct pmadvise *ctl, struct target *t, struct piece *pc,
			  int64_t ret)
{
	if (ret == 0) {
		pc->advised = pc->end - pc->start;
		pc->status = ST_OK;
		note_progress(ctl, pc->advised);
		return;
	}
	if (pc->whole_process && ret == -EINVAL) {
		warnx("PID %d: this kernel has no PR_SET_MEMORY_MERGE: --inject --select all "
		      "needs Linux 6.4 or later with CONFIG_KSM (a narrower selection "
		      "injects madvise instead)", (int) t->pid);
		ctl->unsupported = true;
		pc->status = ST_FAILED;
		pc->error = EINVAL;
		pc->reason = "no PR_SET_MEMORY_MERGE in this kernel (Linux 6.4+)";
		t->error = EINVAL;	/* said once above, not again per row */
		return;
	}
	/* the target's own errno, as madvise(2) gave it */
	finish_piece(pc, (int) -ret);
}

static void report_inject_failure(struct pmadvise *ctl, struct target *t,
				  const struct inject *inj, enum inject_result rc)
{
	if (rc == INJECT_GONE) {
		report_target_error(ctl, t, &ctl->advice, ESRCH);
		return;
	}
	if (rc == INJECT_UNSUPPORTED)
		ctl->unsupported = true;
	progress_clear(&ctl->progress);
	warnx("PID %d: cannot inject %s: %s", (int) t->pid, ctl->advice.name,
	      inject_message(inj));
}

int inject_all(struct pmadvise *ctl, struct target *t)
{
	const struct maps_entry *vdso = NULL;
	enum inject_result rc = INJECT_OK;
	struct inject *inj;
	bool done_any = false;
	size_t i, next = 0;

	for (i = 0; i < t->nmaps; i++)
		if (strcmp(t->maps[i].path, "[vdso]") == 0)
			vdso = &t->maps[i];
	inj = inject_new(t->pid, t->procfd, vdso ? vdso->start : 0, vdso ? vdso->end : 0);
	if (!inj)
		err(EXIT_FAILURE, "cannot allocate memory");

	while (next < t->npieces) {
		size_t calls = 0;

		if (stop_pending())
			break;
		/* a second Ctrl-C must not end pmadvise while the target is held */
		hold_stop_signals(true);
		rc = inject_attach(inj);
		while (rc == INJECT_OK && next < t->npieces && calls < INJECT_CHUNK) {
			struct piece *pc = &t->pieces[next];
			uint64_t args[6] = { 0 };
			int64_t ret;
			long nr;

			if (pc->status != ST_PENDING) {
				next++;
				continue;
			}
			if (pc->whole_process) {
				nr = SYS_prctl;
				args[0] = PR_SET_MEMORY_MERGE;
				args[1] = ctl->advice.value == MADV_MERGEABLE;
			} else {
				nr = SYS_madvise;
				args[0] = pc->start;
				args[1] = pc->end - pc->start;
				args[2] = (uint64_t) ctl->advice.value;
			}
			rc = inject_syscall(inj, nr, args, &ret);
			if (rc != INJECT_OK)
				break;
			calls++;
			next++;
			done_any = true;
			book_injected(ctl, t, pc, ret);
			if (stop_pending())
				break;
		}
		if (inject_detach(inj) != INJECT_OK && rc == INJECT_OK)
			rc = INJECT_FAILED;
		hold_stop_signals(false);	/* a held SIGINT/SIGTERM sets stop_signal here */
		if (rc != INJECT_OK || stop_signal)
			break;
	}

	if (rc != INJECT_OK) {
		report_inject_failure(ctl, t, inj, rc);
		inject_free(inj);
		if (!done_any) {
			/* nothing was tried: the message says it all, no rows needed */
			t->error = rc == INJECT_GONE ? ESRCH : EPERM;
			t->npieces = 0;
			return -1;
		}
		stop_target(t, rc == INJECT_GONE ? ESRCH : EIO);
		return 0;
	}
	inject_free(inj);
	if (stop_signal)
		stop_target(t, ECANCELED);
	return 0;
}
