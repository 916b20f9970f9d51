/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The system calls of the benchmark's C programs, for headers that lack them. */
#ifndef BENCH_SYSCALLS_H
#define BENCH_SYSCALLS_H

#include <sys/syscall.h>
#include <sys/uio.h>

#ifndef SYS_pidfd_open
# define SYS_pidfd_open 434
#endif
#ifndef SYS_process_madvise
# define SYS_process_madvise 440
#endif

#endif
