/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Exact residency of address ranges of another process: resident, swapped
 * and huge-page bytes, from /proc/PID/pagemap.
 *
 * The fast path is the PAGEMAP_SCAN ioctl (Linux 6.7+), which returns the
 * ranges of pages by category in a few calls; the fallback reads the 8-byte
 * pagemap entries.  Both give a sorted list of page runs, and the bytes of
 * any range are summed from that list.
 */
#ifndef PMADVISE_MEASURE_H
#define PMADVISE_MEASURE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Set to "read" to force the pagemap-entry fallback (for tests and old kernels). */
#define MEASURE_ENV	"PMADVISE_PAGEMAP"

enum {
	RUN_PRESENT = 1 << 0,	/* resident, the shared zero page left out as smaps does */
	RUN_SWAPPED = 1 << 1,
	RUN_HUGE    = 1 << 2	/* resident in a PMD-mapped huge page */
};

struct page_run {
	uint64_t start;
	uint64_t end;
	unsigned int flags;
};

struct residency {
	uint64_t rss;
	uint64_t swap;
	uint64_t huge;
};

struct span {
	uint64_t start;
	uint64_t end;
};

struct page_scan {
	int pagemap_fd;
	int kpageflags_fd;	/* fallback's huge-page test, -1 if unreadable */
	bool use_ioctl;		/* PAGEMAP_SCAN works here */
	bool tried_ioctl;
	uint64_t page_size;
	uint64_t zero_pfn;	/* the shared zero page, 0 if unknown */
	bool pfns_hidden;	/* fallback without CAP_SYS_ADMIN: huge pages and
				 * the zero page cannot be told apart */
	struct page_run *runs;
	size_t nruns;
	size_t alloc;
	size_t next_run;	/* page_scan_sum's guess: where the last sum ended */
};

/* Opens /proc/PID/pagemap relative to the target's /proc directory. */
extern int page_scan_open(struct page_scan *ps, int procfd, uint64_t page_size);
extern void page_scan_close(struct page_scan *ps);

/*
 * Scans the spans (sorted by start, not overlapping) into ps->runs, which
 * replaces what an earlier scan found.  Returns 0 or a negative errno.
 */
extern int page_scan(struct page_scan *ps, const struct span *spans, size_t nspans);

/* Bytes of [start, end) in each category, from the last scan. */
extern void page_scan_sum(struct page_scan *ps, uint64_t start, uint64_t end,
			  struct residency *res);

/* smaps fields that only smaps has, per whole mapping. */
struct smaps_fields {
	uint64_t start;
	uint64_t end;
	uint64_t referenced;	/* bytes */
	uint64_t ksm;		/* bytes */
	bool has_ksm;
	unsigned int vmflags;	/* VMF_*, from VmFlags: */
};

/* The VmFlags that explain why the kernel refuses advice for a mapping. */
enum {
	VMF_LOCKED	= 1 << 0,	/* lo: mlock()ed */
	VMF_PFNMAP	= 1 << 1,	/* pf: pages without struct page (device memory) */
	VMF_IO		= 1 << 2,	/* io: memory-mapped I/O */
	VMF_HUGETLB	= 1 << 3	/* ht: hugetlbfs */
};

extern int read_smaps_fields(int procfd, struct smaps_fields **list, size_t *count);
extern const struct smaps_fields *find_smaps_fields(const struct smaps_fields *list,
						    size_t count, uint64_t start);

/* "PAGEMAP_SCAN" or "pagemap" once a scan has run. */
extern const char *page_scan_method(const struct page_scan *ps);

#endif /* PMADVISE_MEASURE_H */
