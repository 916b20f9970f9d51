/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The processes of a cgroup directory.  See cgroup.h.
 */
#ifdef HAVE_CONFIG_H
# include "config.h"
#endif

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cgroup.h"

static int add_pid(struct pid_list *list, pid_t pid)
{
	size_t i;

	/* a process is in one cgroup of a hierarchy, but DIRs may overlap */
	for (i = 0; i < list->count; i++)
		if (list->pids[i] == pid)
			return 0;
	if (list->count == list->alloc) {
		size_t alloc = list->alloc ? list->alloc * 2 : 64;
		pid_t *pids = realloc(list->pids, alloc * sizeof(*pids));

		if (!pids)
			return -ENOMEM;
		list->pids = pids;
		list->alloc = alloc;
	}
	list->pids[list->count++] = pid;
	return 0;
}

/* cgroup.procs: one decimal PID per line. */
static int read_procs(int dirfd, struct pid_list *list, const char **why)
{
	char buf[4096], line[32];
	size_t len = 0;
	ssize_t n;
	int fd, rc = 0;

	fd = openat(dirfd, "cgroup.procs", O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		*why = errno == ENOENT ? "not a cgroup directory (it has no cgroup.procs)"
				       : "cannot open cgroup.procs";
		return -errno;
	}
	while (rc == 0 && (n = read(fd, buf, sizeof(buf))) != 0) {
		ssize_t i;

		if (n < 0) {
			if (errno == EINTR)
				continue;
			rc = -errno;
			*why = "cannot read cgroup.procs";
			break;
		}
		for (i = 0; i < n && rc == 0; i++) {
			char *end;
			long pid;

			if (buf[i] != '\n') {
				if (len >= sizeof(line) - 1) {
					rc = -EINVAL;
					*why = "cgroup.procs holds something that is not a PID";
				}
				line[len++] = buf[i];
				continue;
			}
			line[len] = '\0';
			len = 0;
			errno = 0;
			pid = strtol(line, &end, 10);
			if (errno || end == line || *end || pid <= 0 || pid > INT_MAX) {
				rc = -EINVAL;
				*why = "cgroup.procs holds something that is not a PID";
			} else if ((rc = add_pid(list, (pid_t) pid)) != 0) {
				*why = "cannot allocate memory";
			}
		}
	}
	close(fd);
	return rc;
}

static int read_tree(int dirfd, const char *path, bool recursive, struct pid_list *list,
		     const char **why, char **where)
{
	struct dirent *d;
	DIR *dir;
	int rc = read_procs(dirfd, list, why);

	if (rc != 0 || !recursive) {
		if (rc != 0)
			*where = strdup(path);
		return rc;
	}
	dir = fdopendir(dup(dirfd));
	if (!dir) {
		*why = "cannot list the directory";
		*where = strdup(path);
		return -errno;
	}
	while (rc == 0 && (errno = 0, d = readdir(dir))) {
		char *sub;
		int fd;

		if (d->d_type != DT_DIR || strcmp(d->d_name, ".") == 0
		    || strcmp(d->d_name, "..") == 0)
			continue;
		/* a child cgroup removed while we look is no longer there to advise */
		fd = openat(dirfd, d->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0) {
			if (errno == ENOENT)
				continue;
			rc = -errno;
			*why = "cannot open the directory";
			*where = NULL;
			if (asprintf(where, "%s/%s", path, d->d_name) < 0)
				*where = NULL;
			break;
		}
		if (asprintf(&sub, "%s/%s", path, d->d_name) < 0) {
			close(fd);
			*why = "cannot allocate memory";
			rc = -ENOMEM;
			break;
		}
		rc = read_tree(fd, sub, true, list, why, where);
		if (rc == -ENOENT) {
			/* removed while we looked: its cgroup.procs went with it */
			free(*where);
			*where = NULL;
			rc = 0;
		}
		free(sub);
		close(fd);
	}
	if (rc == 0 && errno) {
		rc = -errno;
		*why = "cannot list the directory";
		*where = strdup(path);
	}
	closedir(dir);
	return rc;
}

int cgroup_read_pids(const char *dir, bool recursive, struct pid_list *list,
		     const char **why, char **where)
{
	int fd, rc;

	*where = NULL;
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		rc = -errno;
		*why = errno == ENOENT ? "no such directory"
		     : errno == ENOTDIR ? "not a directory" : "cannot open the directory";
		*where = strdup(dir);
		return rc;
	}
	rc = read_tree(fd, dir, recursive, list, why, where);
	close(fd);
	return rc;
}

void pid_list_free(struct pid_list *list)
{
	free(list->pids);
	list->pids = NULL;
	list->count = list->alloc = 0;
}
