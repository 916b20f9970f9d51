/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Small helpers: allocation that cannot fail, /proc files, system calls.
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
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#ifdef HAVE_SYS_PIDFD_H
# include <sys/pidfd.h>
#endif

#include "pmadvise.h"

void *xmalloc(size_t size)
{
	void *p = malloc(size ? size : 1);

	if (!p)
		err(EXIT_FAILURE, "cannot allocate %zu bytes", size);
	return p;
}

void *xcalloc(size_t nmemb, size_t size)
{
	void *p = calloc(nmemb ? nmemb : 1, size ? size : 1);

	if (!p)
		err(EXIT_FAILURE, "cannot allocate %zu x %zu bytes", nmemb, size);
	return p;
}

void *xreallocarray(void *ptr, size_t nmemb, size_t size)
{
	void *p;

	if (size && nmemb > SIZE_MAX / size)
		errx(EXIT_FAILURE, "cannot allocate %zu x %zu bytes", nmemb, size);
	p = realloc(ptr, nmemb && size ? nmemb * size : 1);
	if (!p)
		err(EXIT_FAILURE, "cannot allocate %zu x %zu bytes", nmemb, size);
	return p;
}

char *xstrdup(const char *s)
{
	char *p = strdup(s);

	if (!p)
		err(EXIT_FAILURE, "cannot allocate memory");
	return p;
}

char *xasprintf(const char *fmt, ...)
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

/* Reads a whole file relative to dirfd; NUL-terminated, *len without it. */
char *read_proc_file(int dirfd, const char *name, size_t *len)
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
int sys_pidfd_open(pid_t pid)
{
#ifdef HAVE_PIDFD_OPEN
	return pidfd_open(pid, 0);
#else
	return (int) syscall(SYS_pidfd_open, pid, 0);
#endif
}

int sys_pidfd_send_signal(int pidfd, int sig)
{
#ifdef HAVE_PIDFD_SEND_SIGNAL
	return pidfd_send_signal(pidfd, sig, NULL, 0);
#else
	return (int) syscall(SYS_pidfd_send_signal, pidfd, sig, NULL, 0);
#endif
}

ssize_t sys_process_madvise(int pidfd, const struct iovec *iov,
				   size_t n, int advice)
{
#ifdef HAVE_PROCESS_MADVISE
	return process_madvise(pidfd, iov, n, advice, 0);
#else
	return syscall(SYS_process_madvise, pidfd, iov, n, advice, 0);
#endif
}
