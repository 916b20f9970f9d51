/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Targets: each process pinned race-free through a pidfd (SPEC 3).
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

#include "cgroup.h"
#include "pmadvise.h"
#include "escape.h"

/*
 * Targets
 */
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
			errx(EXIT_FAILURE, "invalid PID '%s' in --pid '%s'", esc_mem(p, len),
			     esc(text));
		if (pid == getpid())
			errx(EXIT_FAILURE, "PID %ld is pmadvise itself", pid);
		new_target(ctl, (pid_t) pid)->from_cgroup = false;
		p += len;
	} while (*p++ == ',');
}

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
	t->kernel_thread = flags & PF_KTHREAD;
	free(text);
	return why;
}

/*
 * A process found in a cgroup may exit at any time, and one without memory
 * (a kernel thread in the root cgroup) is not a target: neither is an error
 * worth a message.  A named process that exits is one.
 */
bool exit_is_expected(struct target *t, int error)
{
	if (!t->from_cgroup || error != ESRCH)
		return false;
	t->gone = true;
	return true;
}

/*
 * Pins the process race-free: the pidfd is taken first, then /proc/PID is
 * opened, then the pidfd confirms the process is still alive.  A pidfd does
 * not hold the PID: once the process is reaped, the number can go to another
 * one (tests/56-races.bats makes that happen).  But a process still alive
 * after /proc/PID was opened is the one the directory shows, and the
 * directory of one that has exited stays empty: every later read goes
 * through it, and the advice through the pidfd.
 */
int pin_target(struct target *t, int pidfd)
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
		else if (t->kernel_thread)
			read_comm(t);	/* a cgroup lists it: its summary line names it */
		return -ESRCH;
	}
	read_comm(t);
	return 0;
}

int open_target(struct target *t)
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
	char path[64], *text, *p, *end;
	long fd, pid;
	struct stat st;

	errno = 0;
	fd = strtol(arg, &end, 10);
	if (!isdigit((unsigned char) *arg) || errno || *end || fd > INT_MAX)
		errx(EXIT_FAILURE, "invalid file descriptor '%s' for --pidfd", esc(arg));
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
	new_target(ctl, (pid_t) pid)->pidfd = (int) fd;
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
			errx(EXIT_FAILURE, "--cgroup %s: %s: %s%s%s", esc(dir), esc(where), why,
			     said ? "" : ": ", said ? "" : strerror(-rc));
		errx(EXIT_FAILURE, "--cgroup %s: %s%s%s", esc(dir), why,
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
		errx(EXIT_FAILURE, "--cgroup %s: no process in it%s", esc(dir),
		     ctl->recursive ? " or below it" : " (use --recursive for the cgroups below it)");
}

bool has_targets(const struct pmadvise *ctl)
{
	return ctl->npid_args || ctl->npidfd_args || ctl->ncgroup_args;
}

/* --pidfd targets first, then --pid ones, then the cgroups', in the order given. */
void add_targets(struct pmadvise *ctl)
{
	size_t i;

	for (i = 0; i < ctl->npidfd_args; i++)
		add_pidfd(ctl, ctl->pidfd_args[i]);
	for (i = 0; i < ctl->npid_args; i++)
		add_pid(ctl, ctl->pid_args[i]);
	for (i = 0; i < ctl->ncgroup_args; i++)
		add_cgroup(ctl, ctl->cgroup_args[i]);
}

/*
 * The entries keep only their paths, in blocks that never move (each block
 * starts with a pointer to the one before): on a process with many
 * mappings the text of /proc/PID/maps is as large as the entries, while
 * most mappings have no path and neighbours share theirs.
 */
#define PATH_BLOCK_SIZE		16384
#define MAPS_READ_SIZE		65536

struct path_pool {
	size_t used;
	size_t size;
};

static const char *keep_path(struct target *t, struct path_pool *pool, const char *path)
{
	const struct maps_entry *last = t->nmaps ? &t->maps[t->nmaps - 1] : NULL;
	size_t len = strlen(path) + 1;
	char *copy;

	if (len == 1)
		return "";
	if (last && strcmp(last->path, path) == 0)
		return last->path;
	if (pool->used + len > pool->size) {
		size_t size = sizeof(char *) + len > PATH_BLOCK_SIZE ? sizeof(char *) + len
								    : PATH_BLOCK_SIZE;
		char *block = xmalloc(size);

		memcpy(block, &t->maps_paths, sizeof(char *));
		t->maps_paths = block;
		pool->used = sizeof(char *);
		pool->size = size;
	}
	copy = t->maps_paths + pool->used;
	memcpy(copy, path, len);
	pool->used += len;
	return copy;
}

/*
 * A maps file read while the process changes its mappings can show a
 * mapping again with another start or end, overlapping the line before it
 * (Linux 6.18 does, now and then).  Selection needs the entries in order and
 * disjoint: the part of a line that the line before covers is left out, and
 * a line with nothing left is dropped (false).
 */
static bool keep_disjoint(const struct maps_entry *prev, struct maps_entry *m)
{
	if (m->start >= prev->end)
		return true;
	if (m->end <= prev->end)
		return false;
	m->offset += prev->end - m->start;
	m->start = prev->end;
	return true;
}

static void add_maps_line(struct target *t, struct path_pool *pool, size_t *alloc, char *line)
{
	struct maps_entry entry;
	const char *why = NULL;

	if (parse_maps_line(line, &entry, &why) != 0)
		errx(EXIT_FAILURE, "PID %d: cannot parse /proc/%d/maps: %s: '%s'",
		     (int) t->pid, (int) t->pid, why, esc(line));
	if (t->nmaps && !keep_disjoint(&t->maps[t->nmaps - 1], &entry))
		return;
	entry.path = keep_path(t, pool, entry.path);
	if (t->nmaps == *alloc) {
		*alloc = *alloc ? *alloc * 2 : 256;
		t->maps = xreallocarray(t->maps, *alloc, sizeof(*t->maps));
	}
	t->maps[t->nmaps++] = entry;
}

/* Reads /proc/PID/maps in large blocks, parsing each whole line as it comes. */
int read_target_maps(struct target *t)
{
	struct path_pool pool = { 0, 0 };
	size_t size = MAPS_READ_SIZE, have = 0, alloc = 0;
	int fd, error = 0;
	char *buf;

	fd = openat(t->procfd, "maps", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	buf = xmalloc(size);
	for (;;) {
		ssize_t n = read(fd, buf + have, size - have - 1);
		char *line, *eol;

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			error = errno;
		if (n <= 0)
			break;
		have += (size_t) n;
		for (line = buf; (eol = memchr(line, '\n', have - (size_t) (line - buf))); line = eol + 1) {
			*eol = '\0';
			add_maps_line(t, &pool, &alloc, line);
		}
		have -= (size_t) (line - buf);
		memmove(buf, line, have);
		/* a line longer than the buffer (a path can be PATH_MAX long) */
		if (size - have - 1 < 4096) {
			size *= 2;
			buf = xreallocarray(buf, size, 1);
		}
	}
	if (!error && have) {
		/* the last line, without its newline */
		buf[have] = '\0';
		add_maps_line(t, &pool, &alloc, buf);
	}
	free(buf);
	close(fd);
	return -error;
}

void free_target_maps(struct target *t)
{
	while (t->maps_paths) {
		char *block = t->maps_paths;

		memcpy(&t->maps_paths, block, sizeof(char *));
		free(block);
	}
	free(t->maps);
	t->maps = NULL;
	t->nmaps = 0;
}
