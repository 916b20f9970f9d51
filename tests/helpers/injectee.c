/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * injectee - target programs for the pmadvise --inject tests.  Each mode
 * checks for itself that an injection left it unharmed, and says so in its
 * exit status.
 *
 * Usage: injectee MODE [ARG]
 *
 *   count          counts in a busy loop, checking an invariant that lives in
 *                  registers (integer and SSE) and in memory on every turn;
 *                  SIGUSR1 prints "count N", SIGTERM prints it and exits 0.
 *                  A broken invariant prints what broke and exits 3.
 *   threads DIR    the main thread blocks in read() on DIR/main.fifo, one
 *                  thread in poll() on DIR/poll.fifo, one in FUTEX_WAIT that
 *                  the poll thread wakes.  Prints what each got and exits 0
 *                  once all three have; an error (EINTR included) exits 2.
 *   seccomp-prctl  installs a seccomp filter that kills the process on
 *                  prctl(2), then waits for SIGTERM (exit 0).
 *   unmap          maps three one-page regions "a b c" between guard pages;
 *                  SIGUSR1 unmaps b; SIGTERM exits 0.
 *
 * Every mode prints "ready" once it is set up.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/futex.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

static volatile sig_atomic_t stop_requested;
static volatile sig_atomic_t report_requested;
static volatile sig_atomic_t unmap_requested;

static void on_signal(int sig)
{
	if (sig == SIGTERM || sig == SIGINT)
		stop_requested = 1;
	else if (sig == SIGUSR1)
		report_requested = unmap_requested = 1;
}

static void catch(int sig)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(sig, &sa, NULL);	/* no SA_RESTART: waits end on a signal */
}

static void ready(void)
{
	printf("ready\n");
	fflush(stdout);
}

static void __attribute__((noreturn)) fail(int status, const char *what)
{
	fprintf(stderr, "injectee: %s: %s\n", what, strerror(errno));
	exit(status);
}

/*
 * count: b == 3 * a, d == a and the memory ring agree on every turn.  An
 * injection that does not put every register back breaks one of them.
 */
static volatile uint64_t step = 1;
static volatile uint64_t ring[64];

static int run_count(void)
{
	uint64_t a = 0, b = 0;
	double d = 0;

	catch(SIGTERM);
	catch(SIGUSR1);
	ready();
	while (!stop_requested) {
		uint64_t s = step;

		a += s;
		b += 3 * s;
		d += (double) s;
		ring[a & 63] = a;
		if (b != 3 * a || d != (double) a || ring[a & 63] != a
		    || ring[(a - 1) & 63] != a - 1) {
			fprintf(stderr, "injectee: invariant broken at %llu: b %llu d %.0f\n",
				(unsigned long long) a, (unsigned long long) b, d);
			return 3;
		}
		if (report_requested) {
			report_requested = 0;
			printf("count %llu\n", (unsigned long long) a);
			fflush(stdout);
		}
	}
	printf("count %llu\n", (unsigned long long) a);
	return 0;
}

/* threads: blocked in read(), poll() and FUTEX_WAIT while the main thread is borrowed. */
static uint32_t futex_word;

static int open_fifo(const char *dir, const char *name)
{
	char path[4096];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	unlink(path);
	if (mkfifo(path, 0600) != 0)
		fail(2, path);
	/* O_RDWR: the open does not wait for a writer */
	fd = open(path, O_RDWR);
	if (fd < 0)
		fail(2, path);
	return fd;
}

/* Reads what is there on fd and prints it after `label`. */
static void read_and_print(int fd, const char *label)
{
	char buf[64];
	ssize_t n;

	n = read(fd, buf, sizeof(buf) - 1);
	if (n <= 0)
		fail(2, label);
	buf[n] = '\0';
	printf("%s: %s", label, buf);
	fflush(stdout);
}

static void *futex_thread(void *arg)
{
	(void) arg;
	while (__atomic_load_n(&futex_word, __ATOMIC_SEQ_CST) == 0) {
		if (syscall(SYS_futex, &futex_word, FUTEX_WAIT, 0, NULL, NULL, 0) != 0
		    && errno != EAGAIN)
			fail(2, "futex wait");
	}
	printf("futex woken\n");
	fflush(stdout);
	return NULL;
}

static void *poll_thread(void *arg)
{
	int fd = *(int *) arg;
	struct pollfd p = { fd, POLLIN, 0 };

	if (poll(&p, 1, -1) != 1)
		fail(2, "poll");
	read_and_print(fd, "poll read");
	__atomic_store_n(&futex_word, 1, __ATOMIC_SEQ_CST);
	syscall(SYS_futex, &futex_word, FUTEX_WAKE, 1, NULL, NULL, 0);
	return NULL;
}

static int run_threads(const char *dir)
{
	int main_fd = open_fifo(dir, "main.fifo"), poll_fd = open_fifo(dir, "poll.fifo");
	pthread_t futex_tid, poll_tid;

	if (pthread_create(&futex_tid, NULL, futex_thread, NULL) != 0
	    || pthread_create(&poll_tid, NULL, poll_thread, &poll_fd) != 0)
		fail(2, "pthread_create");
	usleep(100000);		/* let them block first */
	ready();
	/* EINTR here would mean the injection let the read fail instead of restarting it */
	read_and_print(main_fd, "main read");
	pthread_join(poll_tid, NULL);
	pthread_join(futex_tid, NULL);
	printf("all threads done\n");
	return 0;
}

/* seccomp-prctl: prctl(2) kills the process; everything else is allowed. */
static int run_seccomp_prctl(void)
{
	struct sock_filter filter[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_prctl, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { sizeof(filter) / sizeof(filter[0]), filter };

	catch(SIGTERM);
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
		fail(2, "PR_SET_NO_NEW_PRIVS");
	/* the last prctl this process makes */
	if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0)
		fail(2, "PR_SET_SECCOMP");
	ready();
	while (!stop_requested)
		usleep(20000);
	return 0;
}

/* unmap: three pages a, b, c, each its own mapping; SIGUSR1 unmaps b. */
static int run_unmap(void)
{
	long page = sysconf(_SC_PAGESIZE);
	char *base, *region[3];
	int i;

	catch(SIGTERM);
	catch(SIGUSR1);
	/* guard, a, guard, b, guard, c, guard: never merged into one mapping */
	base = mmap(NULL, (size_t) page * 7, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (base == MAP_FAILED)
		fail(2, "mmap");
	for (i = 0; i < 3; i++) {
		region[i] = base + page * (1 + 2 * i);
		if (mprotect(region[i], (size_t) page, PROT_READ | PROT_WRITE) != 0)
			fail(2, "mprotect");
		memset(region[i], 'a' + i, (size_t) page);
		printf("%c %lx %lx\n", 'a' + i, (unsigned long) region[i],
		       (unsigned long) (region[i] + page));
	}
	ready();
	while (!stop_requested) {
		if (unmap_requested) {
			unmap_requested = 0;
			if (munmap(region[1], (size_t) page) != 0)
				fail(2, "munmap");
			printf("unmapped b\n");
			fflush(stdout);
		}
		usleep(20000);
	}
	return region[0][0] == 'a' && region[2][0] == 'c' ? 0 : 3;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc == 2 && strcmp(argv[1], "count") == 0)
		return run_count();
	if (argc == 3 && strcmp(argv[1], "threads") == 0)
		return run_threads(argv[2]);
	if (argc == 2 && strcmp(argv[1], "seccomp-prctl") == 0)
		return run_seccomp_prctl();
	if (argc == 2 && strcmp(argv[1], "unmap") == 0)
		return run_unmap();
	fputs("Usage: injectee count | threads DIR | seccomp-prctl | unmap\n", stderr);
	return 1;
}
