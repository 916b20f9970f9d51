/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Running one system call inside another process, the way a debugger calls
 * a function in a stopped program: attach one thread with ptrace, point it
 * at a syscall instruction that already exists in its vDSO, let it make the
 * call, and put its registers and signal mask back exactly as they were.
 *
 * Used by pmadvise --inject for KSM hints that the kernel does not take
 * from another process (prctl(PR_SET_MEMORY_MERGE), madvise(MADV_MERGEABLE)).
 * x86-64 only; elsewhere every call answers INJECT_UNSUPPORTED.
 */
#ifndef PMADVISE_INJECT_H
#define PMADVISE_INJECT_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

enum inject_result {
	INJECT_OK = 0,
	INJECT_REFUSED,		/* not attached: traced, seccomp, no permission... */
	INJECT_UNSUPPORTED,	/* this architecture or this process cannot be done */
	INJECT_GONE,		/* the process (or its thread) exited */
	INJECT_FAILED		/* ptrace failed part way; the message says what */
};

struct inject;

/* True when this build can inject (x86-64). */
bool inject_supported(void);

/*
 * A handle for the process `pid`, whose /proc/PID directory is `procfd`
 * (kept open by the caller) and whose [vdso] mapping is [vdso_start,
 * vdso_end) (0, 0 when it has none).  Nothing is touched yet.
 */
struct inject *inject_new(pid_t pid, int procfd, uint64_t vdso_start, uint64_t vdso_end);
void inject_free(struct inject *inj);

/*
 * Checks that refuse before attaching (a tracer, seccomp without
 * CAP_SYS_ADMIN), then seizes one thread, stops it, saves its registers and
 * signal mask and blocks all its signals.  A thread inside an rseq critical
 * section is let go and tried again a bounded number of times.
 */
enum inject_result inject_attach(struct inject *inj);

/*
 * Runs system call `nr` with up to six arguments in the attached thread.
 * *ret is what the call returned in the target: >= 0, or -errno.
 */
enum inject_result inject_syscall(struct inject *inj, long nr, const uint64_t args[6],
				  int64_t *ret);

/*
 * Restores the registers and signal mask as found and detaches.  An
 * interrupted system call of the thread restarts as the kernel would have
 * restarted it; a stopped (SIGSTOP) process stays stopped.
 */
enum inject_result inject_detach(struct inject *inj);

/* Why the last call did not return INJECT_OK, in words ("" if it did). */
const char *inject_message(const struct inject *inj);

/* The thread that is (or was last) attached. */
pid_t inject_thread(const struct inject *inj);

#endif /* PMADVISE_INJECT_H */
