/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Running one system call inside another process (see inject.h).
 *
 * The order of the steps is what keeps the target unharmed:
 *
 *  1. PTRACE_SEIZE one thread (never PTRACE_ATTACH: it would send a SIGSTOP
 *     that the process could notice) and PTRACE_INTERRUPT it.  Every stop
 *     this gives is inside the kernel's get_signal(), before the kernel
 *     decides whether an interrupted system call of the thread is restarted.
 *  2. Save its registers and signal mask; block every signal, so that no
 *     handler can run on top of borrowed registers.
 *  3. Point the instruction pointer at a `syscall` instruction in the vDSO
 *     (nothing is ever written into the target's code) with the call in the
 *     registers, and orig_rax -1 so that the kernel does not apply the
 *     thread's own restart logic to them; run to the syscall-exit stop.
 *  4. Put the saved registers back, and bring the thread into a fresh
 *     PTRACE_INTERRUPT stop before detaching: that stop is in get_signal()
 *     again, so on the way out the kernel sees the saved orig_rax and rax and
 *     restarts an interrupted call (-ERESTARTSYS, -ERESTART_RESTARTBLOCK...)
 *     exactly as it would have without us.  Detaching with no signal lets
 *     the kernel put a group-stopped (SIGSTOP) process back into its stop.
 */
#ifdef HAVE_CONFIG_H
# include "config.h"
#endif

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/ptrace.h>
#include <sys/types.h>
#include <sys/wait.h>
#ifdef __x86_64__
# include <sys/user.h>
#endif

#include "inject.h"

struct inject {
	pid_t pid;
	pid_t tid;			/* the attached thread */
	int procfd;			/* /proc/PID, the caller's */
	uint64_t vdso_start;
	uint64_t vdso_end;
	uint64_t syscall_at;		/* a syscall instruction in the vDSO, 0 until found */
	bool attached;
	bool injected;			/* registers changed since the attach */
	bool suspend_seccomp;
#ifdef __x86_64__
	struct user_regs_struct saved_regs;
#endif
	uint64_t saved_mask;
	char message[512];
};

static enum inject_result fail(struct inject *inj, enum inject_result result,
			       const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static enum inject_result fail(struct inject *inj, enum inject_result result,
			       const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(inj->message, sizeof(inj->message), fmt, ap);
	va_end(ap);
	return result;
}

struct inject *inject_new(pid_t pid, int procfd, uint64_t vdso_start, uint64_t vdso_end)
{
	struct inject *inj = calloc(1, sizeof(*inj));

	if (!inj)
		return NULL;
	inj->pid = pid;
	inj->tid = pid;
	inj->procfd = procfd;
	inj->vdso_start = vdso_start;
	inj->vdso_end = vdso_end;
	return inj;
}

void inject_free(struct inject *inj)
{
	free(inj);
}

const char *inject_message(const struct inject *inj)
{
	return inj->message;
}

pid_t inject_thread(const struct inject *inj)
{
	return inj->tid;
}

#ifndef __x86_64__

bool inject_supported(void)
{
	return false;
}

enum inject_result inject_attach(struct inject *inj)
{
	return fail(inj, INJECT_UNSUPPORTED, "--inject is not supported on this architecture "
		    "(it needs x86-64)");
}

enum inject_result inject_syscall(struct inject *inj, long nr, const uint64_t args[6],
				  int64_t *ret)
{
	(void) nr;
	(void) args;
	(void) ret;
	return inject_attach(inj);
}

enum inject_result inject_detach(struct inject *inj)
{
	(void) inj;
	return INJECT_OK;
}

#else /* __x86_64__ */

#ifndef PTRACE_EVENT_STOP
# define PTRACE_EVENT_STOP 128
#endif
#ifndef PTRACE_O_SUSPEND_SECCOMP
# define PTRACE_O_SUSPEND_SECCOMP (1 << 21)
#endif
#ifndef PTRACE_GET_RSEQ_CONFIGURATION
# define PTRACE_GET_RSEQ_CONFIGURATION 0x420f
#endif

#define USER64_CS		0x33	/* a 64-bit thread's code segment */
#define CAP_SYS_ADMIN_BIT	21
#define SYSCALL_INSN_0		0x0f
#define SYSCALL_INSN_1		0x05
/* A thread inside an rseq critical section is let go this many times. */
#define RSEQ_RETRIES		100
/* How long a thread may take to stop (one in uninterruptible sleep may not). */
#define STOP_TIMEOUT_MS		10000

struct rseq_configuration {		/* PTRACE_GET_RSEQ_CONFIGURATION, 5.13+ */
	uint64_t rseq_abi_pointer;
	uint32_t rseq_abi_size;
	uint32_t signature;
	uint32_t flags;
	uint32_t pad;
};

struct rseq_critical_section {		/* struct rseq_cs of linux/rseq.h */
	uint32_t version;
	uint32_t flags;
	uint64_t start_ip;
	uint64_t post_commit_offset;
	uint64_t abort_ip;
};

bool inject_supported(void)
{
	return true;
}

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

/* Reads a small /proc file relative to dirfd (or an absolute path); NULL on error. */
static char *read_small_file(int dirfd, const char *name)
{
	static char buf[8192];
	ssize_t n;
	int fd;

	fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	do
		n = read(fd, buf, sizeof(buf) - 1);
	while (n < 0 && errno == EINTR);
	close(fd);
	if (n < 0)
		return NULL;
	buf[n] = '\0';
	return buf;
}

/* The text after "KEY:" on its line of a status file, or NULL. */
static const char *status_value(const char *text, const char *key)
{
	size_t len = strlen(key);
	const char *line;

	for (line = text; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
		if (strncmp(line, key, len) == 0 && line[len] == ':') {
			line += len + 1;
			while (*line == ' ' || *line == '\t')
				line++;
			return line;
		}
	}
	return NULL;
}

static bool have_cap_sys_admin(void)
{
	const char *text = read_small_file(AT_FDCWD, "/proc/self/status");
	const char *caps = text ? status_value(text, "CapEff") : NULL;

	return caps && (strtoull(caps, NULL, 16) >> CAP_SYS_ADMIN_BIT) & 1;
}

/* The state letter of a thread of the target ('?' if it cannot be read). */
static char thread_state(const struct inject *inj, pid_t tid)
{
	char name[64];
	const char *text, *paren;

	snprintf(name, sizeof(name), "task/%d/stat", (int) tid);
	text = read_small_file(inj->procfd, name);
	paren = text ? strrchr(text, ')') : NULL;
	return paren && paren[1] == ' ' ? paren[2] : '?';
}

/* The thread to borrow: the main one, or the first live one when it is gone. */
static pid_t choose_thread(const struct inject *inj)
{
	struct dirent *d;
	pid_t found = 0;
	DIR *dir;
	int fd;

	if (thread_state(inj, inj->pid) != 'Z' && thread_state(inj, inj->pid) != '?')
		return inj->pid;
	fd = openat(inj->procfd, "task", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 || !(dir = fdopendir(fd))) {
		if (fd >= 0)
			close(fd);
		return inj->pid;
	}
	while (!found && (d = readdir(dir))) {
		pid_t tid = (pid_t) strtol(d->d_name, NULL, 10);
		char state;

		if (tid <= 0)
			continue;
		state = thread_state(inj, tid);
		if (state != 'Z' && state != 'X' && state != '?')
			found = tid;
	}
	closedir(dir);
	return found ? found : inj->pid;
}

/* Reads target memory through /proc/PID/mem (we are its tracer). */
static int read_target(const struct inject *inj, uint64_t addr, void *buf, size_t len)
{
	ssize_t n;
	int fd;

	fd = openat(inj->procfd, "mem", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = pread(fd, buf, len, (off_t) addr);
	close(fd);
	return n == (ssize_t) len ? 0 : -1;
}

static enum inject_result find_syscall_instruction(struct inject *inj)
{
	unsigned char *code;
	size_t len, i;

	if (inj->syscall_at)
		return INJECT_OK;
	if (inj->vdso_end <= inj->vdso_start)
		return fail(inj, INJECT_UNSUPPORTED, "it has no vDSO, which holds the syscall "
			    "instruction that --inject borrows (pmadvise never writes into a "
			    "process's code)");
	len = (size_t) (inj->vdso_end - inj->vdso_start);
	code = malloc(len);
	if (!code)
		return fail(inj, INJECT_FAILED, "cannot allocate memory");
	if (read_target(inj, inj->vdso_start, code, len) != 0) {
		int error = errno;

		free(code);
		return fail(inj, INJECT_FAILED, "cannot read its vDSO: %s", strerror(error));
	}
	for (i = 0; i + 1 < len; i++) {
		if (code[i] == SYSCALL_INSN_0 && code[i + 1] == SYSCALL_INSN_1) {
			inj->syscall_at = inj->vdso_start + i;
			break;
		}
	}
	free(code);
	if (!inj->syscall_at)
		return fail(inj, INJECT_UNSUPPORTED, "no syscall instruction in its vDSO");
	return INJECT_OK;
}

/* Why the target may not be traced, for a refusal message. */
static void explain_eperm(struct inject *inj)
{
	const char *scope = read_small_file(AT_FDCWD, "/proc/sys/kernel/yama/ptrace_scope");

	if (scope && atoi(scope) > 0)
		fail(inj, INJECT_REFUSED, "ptrace is not allowed: Yama's kernel.yama.ptrace_scope "
		     "is %d (0 allows it; 1 and 2 need CAP_SYS_PTRACE, 3 forbids it)", atoi(scope));
	else
		fail(inj, INJECT_REFUSED, "ptrace is not allowed: another user's process, or one "
		     "with more privileges, needs CAP_SYS_PTRACE (run as root)");
}

/* Refusals that need no ptrace: a tracer already there, seccomp. */
static enum inject_result check_thread(struct inject *inj)
{
	char name[64];
	const char *text, *value;
	long tracer, seccomp;

	snprintf(name, sizeof(name), "task/%d/status", (int) inj->tid);
	text = read_small_file(inj->procfd, name);
	if (!text)
		return errno == ENOENT || errno == ESRCH
			? fail(inj, INJECT_GONE, "process has exited")
			: fail(inj, INJECT_FAILED, "cannot read its status: %s", strerror(errno));
	value = status_value(text, "TracerPid");
	tracer = value ? strtol(value, NULL, 10) : 0;
	value = status_value(text, "Seccomp");
	seccomp = value ? strtol(value, NULL, 10) : 0;

	if (tracer > 0) {
		char path[64];
		const char *comm;

		snprintf(path, sizeof(path), "/proc/%ld/comm", tracer);
		comm = read_small_file(AT_FDCWD, path);
		return fail(inj, INJECT_REFUSED, "it is already traced by PID %ld%s%.*s%s "
			    "(a debugger or strace?): a process has one tracer at a time, "
			    "detach that one first", tracer, comm ? " (" : "",
			    comm ? (int) strcspn(comm, "\n") : 0, comm ? comm : "", comm ? ")" : "");
	}
	inj->suspend_seccomp = false;
	if (seccomp > 0) {
		if (!have_cap_sys_admin())
			return fail(inj, INJECT_REFUSED, "it runs under a seccomp filter, which "
				    "could kill it for the injected system call; suspending the "
				    "filter for the injection needs CAP_SYS_ADMIN (run as root)");
		inj->suspend_seccomp = true;
	}
	return INJECT_OK;
}

/*
 * Waits for the next stop of the attached thread.  bounded: give up after
 * STOP_TIMEOUT_MS (a thread in uninterruptible sleep does not stop).
 */
static enum inject_result wait_stop(struct inject *inj, int *status, bool bounded)
{
	long waited = 0;

	for (;;) {
		pid_t got = waitpid(inj->tid, status, __WALL | (bounded ? WNOHANG : 0));

		if (got < 0) {
			if (errno == EINTR)
				continue;	/* a signal for pmadvise: finish first */
			inj->attached = false;
			if (errno == ECHILD)
				return fail(inj, INJECT_GONE, "process has exited");
			return fail(inj, INJECT_FAILED, "waitpid: %s", strerror(errno));
		}
		if (got == 0) {
			if (waited >= STOP_TIMEOUT_MS)
				return fail(inj, INJECT_FAILED, "thread %d did not stop within %d s "
					    "(uninterruptible sleep?)", (int) inj->tid,
					    STOP_TIMEOUT_MS / 1000);
			sleep_ms(1);
			waited++;
			continue;
		}
		if (WIFEXITED(*status) || WIFSIGNALED(*status)) {
			inj->attached = false;
			return fail(inj, INJECT_GONE, "process has exited");
		}
		if (WIFSTOPPED(*status))
			return INJECT_OK;
	}
}

static bool is_event_stop(int status)
{
	return (status >> 16) == PTRACE_EVENT_STOP;
}

static bool is_syscall_stop(int status)
{
	return (status >> 16) == 0 && WSTOPSIG(status) == (SIGTRAP | 0x80);
}

static enum inject_result ptrace_failed(struct inject *inj, const char *what)
{
	int error = errno, status;

	/*
	 * ESRCH for a thread we hold means it is not stopped any more: only
	 * SIGKILL takes a thread out of a ptrace stop, and its exit is on its
	 * way to waitpid.
	 */
	if (error == ESRCH && inj->attached
	    && wait_stop(inj, &status, true) == INJECT_GONE)
		return INJECT_GONE;
	if (error == ESRCH && thread_state(inj, inj->tid) == '?') {
		inj->attached = false;
		return fail(inj, INJECT_GONE, "process has exited");
	}
	return fail(inj, INJECT_FAILED, "%s of thread %d: %s", what, (int) inj->tid,
		    strerror(error));
}

/*
 * Resumes with `request` and waits for a stop that `wanted` accepts.  Other
 * stops on the way are stepped over: a signal-delivery-stop (only SIGSTOP
 * can come, all else is blocked) passes its signal on; a group-stop or a
 * leftover PTRACE_INTERRUPT trap is resumed.
 */
static enum inject_result resume_until(struct inject *inj, enum __ptrace_request request,
				       bool (*wanted)(int status))
{
	enum inject_result rc;
	int status, sig = 0;

	for (;;) {
		if (ptrace(request, inj->tid, NULL, (void *) (uintptr_t) sig) != 0)
			return ptrace_failed(inj, "resuming");
		rc = wait_stop(inj, &status, false);
		if (rc != INJECT_OK)
			return rc;
		if (wanted(status))
			return INJECT_OK;
		sig = 0;
		if ((status >> 16) == 0 && WSTOPSIG(status) != (SIGTRAP | 0x80))
			sig = WSTOPSIG(status);
	}
}

/* True when ip is inside the thread's current rseq critical section. */
static bool in_rseq_critical_section(struct inject *inj, uint64_t ip)
{
	struct rseq_configuration conf;
	struct rseq_critical_section cs;
	uint64_t cs_pointer;

	memset(&conf, 0, sizeof(conf));
	/* before 5.13 there is no way to ask: assume no rseq */
	if (ptrace(PTRACE_GET_RSEQ_CONFIGURATION, inj->tid, (void *) sizeof(conf), &conf)
	    != (long) sizeof(conf) || !conf.rseq_abi_pointer)
		return false;
	/* struct rseq: u32 cpu_id_start, u32 cpu_id, u64 rseq_cs */
	if (read_target(inj, conf.rseq_abi_pointer + 8, &cs_pointer, sizeof(cs_pointer)) != 0
	    || !cs_pointer)
		return false;
	if (read_target(inj, cs_pointer, &cs, sizeof(cs)) != 0)
		return false;
	return ip >= cs.start_ip && ip - cs.start_ip < cs.post_commit_offset;
}

/* Seizes the thread and waits for its first stop. */
static enum inject_result seize_and_stop(struct inject *inj)
{
	long options = PTRACE_O_TRACESYSGOOD;
	enum inject_result rc;
	int status;

	if (inj->suspend_seccomp)
		options |= PTRACE_O_SUSPEND_SECCOMP;
	if (ptrace(PTRACE_SEIZE, inj->tid, NULL, (void *) options) != 0) {
		if (errno == ESRCH)
			return fail(inj, INJECT_GONE, "process has exited");
		if (inj->suspend_seccomp && (errno == EPERM || errno == EINVAL))
			return fail(inj, INJECT_REFUSED, "it runs under a seccomp filter, and the "
				    "kernel refused to suspend it for the injection (%s): pmadvise "
				    "itself runs under seccomp, or the kernel lacks "
				    "CONFIG_CHECKPOINT_RESTORE", strerror(errno));
		if (errno == EPERM) {
			explain_eperm(inj);
			return INJECT_REFUSED;
		}
		return fail(inj, INJECT_FAILED, "PTRACE_SEIZE of thread %d: %s",
			    (int) inj->tid, strerror(errno));
	}
	inj->attached = true;
	if (ptrace(PTRACE_INTERRUPT, inj->tid, NULL, NULL) != 0)
		return ptrace_failed(inj, "PTRACE_INTERRUPT");
	for (;;) {
		rc = wait_stop(inj, &status, true);
		if (rc != INJECT_OK)
			return rc;
		if (is_event_stop(status))
			return INJECT_OK;
		/* a signal on its way in: let it be delivered, then the trap comes */
		if (ptrace(PTRACE_CONT, inj->tid, NULL,
			   (void *) (uintptr_t) WSTOPSIG(status)) != 0)
			return ptrace_failed(inj, "resuming");
	}
}

/* Detaches from a thread that was never changed. */
static void let_go(struct inject *inj)
{
	ptrace(PTRACE_DETACH, inj->tid, NULL, NULL);
	inj->attached = false;
}

enum inject_result inject_attach(struct inject *inj)
{
	enum inject_result rc;
	uint64_t all = ~UINT64_C(0);
	int tries;

	inj->message[0] = '\0';
	if (inj->attached)
		return INJECT_OK;
	inj->injected = false;
	for (tries = 0;; tries++) {
		inj->tid = choose_thread(inj);
		rc = check_thread(inj);
		if (rc != INJECT_OK)
			return rc;
		rc = seize_and_stop(inj);
		if (rc != INJECT_OK) {
			if (inj->attached)
				let_go(inj);
			return rc;
		}
		if (ptrace(PTRACE_GETREGS, inj->tid, NULL, &inj->saved_regs) != 0) {
			rc = ptrace_failed(inj, "PTRACE_GETREGS");
			let_go(inj);
			return rc;
		}
		if (inj->saved_regs.cs != USER64_CS) {
			let_go(inj);
			return fail(inj, INJECT_UNSUPPORTED, "thread %d runs 32-bit code: --inject "
				    "supports 64-bit processes only", (int) inj->tid);
		}
		if (!in_rseq_critical_section(inj, inj->saved_regs.rip))
			break;
		/* the kernel aborts the critical section on its way out: let it */
		let_go(inj);
		if (tries == RSEQ_RETRIES)
			return fail(inj, INJECT_FAILED, "thread %d was inside an rseq critical "
				    "section %d times in a row: try again", (int) inj->tid,
				    RSEQ_RETRIES + 1);
		sleep_ms(1);
	}

	rc = find_syscall_instruction(inj);
	if (rc != INJECT_OK) {
		let_go(inj);
		return rc;
	}
	if (ptrace(PTRACE_GETSIGMASK, inj->tid, (void *) sizeof(inj->saved_mask),
		   &inj->saved_mask) != 0
	    || ptrace(PTRACE_SETSIGMASK, inj->tid, (void *) sizeof(all), &all) != 0) {
		rc = ptrace_failed(inj, "saving the signal mask");
		if (inj->attached)
			let_go(inj);
		return rc;
	}
	return INJECT_OK;
}

enum inject_result inject_syscall(struct inject *inj, long nr, const uint64_t args[6],
				  int64_t *ret)
{
	struct user_regs_struct regs = inj->saved_regs;
	enum inject_result rc;

	inj->message[0] = '\0';
	if (!inj->attached)
		return fail(inj, INJECT_FAILED, "not attached");
	regs.rip = inj->syscall_at;
	regs.rax = (unsigned long long) nr;
	/* not in a system call: the kernel must not restart anything on these */
	regs.orig_rax = (unsigned long long) -1;
	regs.rdi = args[0];
	regs.rsi = args[1];
	regs.rdx = args[2];
	regs.r10 = args[3];
	regs.r8 = args[4];
	regs.r9 = args[5];
	if (ptrace(PTRACE_SETREGS, inj->tid, NULL, &regs) != 0)
		return ptrace_failed(inj, "PTRACE_SETREGS");
	inj->injected = true;

	rc = resume_until(inj, PTRACE_SYSCALL, is_syscall_stop);	/* entry */
	if (rc != INJECT_OK)
		return rc;
	if (ptrace(PTRACE_GETREGS, inj->tid, NULL, &regs) != 0)
		return ptrace_failed(inj, "PTRACE_GETREGS");
	if ((long) regs.orig_rax != nr)
		return fail(inj, INJECT_FAILED, "thread %d entered system call %lld, not %ld",
			    (int) inj->tid, (long long) regs.orig_rax, nr);
	rc = resume_until(inj, PTRACE_SYSCALL, is_syscall_stop);	/* exit */
	if (rc != INJECT_OK)
		return rc;
	if (ptrace(PTRACE_GETREGS, inj->tid, NULL, &regs) != 0)
		return ptrace_failed(inj, "PTRACE_GETREGS");
	*ret = (int64_t) regs.rax;
	return INJECT_OK;
}

enum inject_result inject_detach(struct inject *inj)
{
	enum inject_result rc = INJECT_OK;

	if (!inj->attached)
		return INJECT_OK;
	if (inj->injected) {
		/*
		 * From the syscall-exit stop back into a PTRACE_INTERRUPT stop
		 * inside get_signal(), where the thread was found: only from
		 * there does the kernel apply the restart logic to the restored
		 * orig_rax and rax when the thread goes on.
		 */
		if (ptrace(PTRACE_SETREGS, inj->tid, NULL, &inj->saved_regs) != 0)
			return ptrace_failed(inj, "restoring the registers");
		if (ptrace(PTRACE_INTERRUPT, inj->tid, NULL, NULL) != 0)
			return ptrace_failed(inj, "PTRACE_INTERRUPT");
		rc = resume_until(inj, PTRACE_CONT, is_event_stop);
		if (rc != INJECT_OK)
			return rc;
		if (ptrace(PTRACE_SETREGS, inj->tid, NULL, &inj->saved_regs) != 0)
			return ptrace_failed(inj, "restoring the registers");
		inj->injected = false;
	}
	if (ptrace(PTRACE_SETSIGMASK, inj->tid, (void *) sizeof(inj->saved_mask),
		   &inj->saved_mask) != 0)
		rc = ptrace_failed(inj, "restoring the signal mask");
	/* no signal: a group-stopped process is put back into its stop by the kernel */
	if (ptrace(PTRACE_DETACH, inj->tid, NULL, NULL) != 0 && rc == INJECT_OK)
		rc = ptrace_failed(inj, "PTRACE_DETACH");
	inj->attached = false;
	return rc;
}

#endif /* __x86_64__ */
