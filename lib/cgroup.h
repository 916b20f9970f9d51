/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The processes of a cgroup directory: cgroup v2, or a v1 hierarchy such as
 * /sys/fs/cgroup/memory/..., both list them in cgroup.procs.
 */
#ifndef PMADVISE_CGROUP_H
#define PMADVISE_CGROUP_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct pid_list {
	pid_t *pids;
	size_t count;
	size_t alloc;
};

/*
 * Appends the PIDs listed in DIR/cgroup.procs (and, with recursive, in
 * every cgroup below DIR) to list, each once.  Returns 0, or -errno with
 * *why naming what failed (static text; *where is the path it concerns,
 * malloc'ed, for the caller to free).
 */
extern int cgroup_read_pids(const char *dir, bool recursive, struct pid_list *list,
			    const char **why, char **where);
extern void pid_list_free(struct pid_list *list);

#endif
