#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
#
# handwritten.py - the short script a user writes without pmadvise: one
# process_madvise call per mapping through ctypes.
#
# Usage: handwritten.py PID ADVICE_NUMBER
import ctypes
import os
import sys

libc = ctypes.CDLL(None, use_errno=True)


class iovec(ctypes.Structure):
    _fields_ = [("iov_base", ctypes.c_void_p), ("iov_len", ctypes.c_size_t)]


pid, advice = int(sys.argv[1]), int(sys.argv[2])
pidfd = os.pidfd_open(pid)
iov = iovec()
status = 0
with open(f"/proc/{pid}/maps") as maps:
    for line in maps:
        if "[vvar" in line or "[vsyscall]" in line:
            continue
        start, end = (int(x, 16) for x in line.split(None, 1)[0].split("-"))
        iov.iov_base, iov.iov_len = start, end - start
        if libc.process_madvise(pidfd, ctypes.byref(iov), ctypes.c_size_t(1),
                                advice, ctypes.c_uint(0)) < 0:
            print(f"{start:x}-{end:x}: {os.strerror(ctypes.get_errno())}", file=sys.stderr)
            status = 1
sys.exit(status)
