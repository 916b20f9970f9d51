/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Exact residency of another process's address ranges.  See measure.h.
 */
#include <errno.h>
#include <stdio.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>

#include "measure.h"

/*
 * PAGEMAP_SCAN (linux/fs.h since 6.7), defined here for older headers.
 */
#ifndef PAGEMAP_SCAN
struct page_region {
	uint64_t start;
	uint64_t end;
	uint64_t categories;
};

struct pm_scan_arg {
	uint64_t size;
	uint64_t flags;
	uint64_t start;
	uint64_t end;
	uint64_t walk_end;
	uint64_t vec;
	uint64_t vec_len;
	uint64_t max_pages;
	uint64_t category_inverted;
	uint64_t category_mask;
	uint64_t category_anyof_mask;
	uint64_t return_mask;
};

# define PAGEMAP_SCAN		_IOWR('f', 16, struct pm_scan_arg)
# define PAGE_IS_PRESENT	(1 << 3)
# define PAGE_IS_SWAPPED	(1 << 4)
# define PAGE_IS_PFNZERO	(1 << 5)
# define PAGE_IS_HUGE		(1 << 6)
#endif

/* pagemap entry bits (Documentation/admin-guide/mm/pagemap.rst) */
#define PM_PRESENT		(UINT64_C(1) << 63)
#define PM_SWAPPED		(UINT64_C(1) << 62)
#define PM_PFN_MASK		((UINT64_C(1) << 55) - 1)
#define KPF_THP			22

#define SCAN_VEC_LEN		4096
#define HUGE_SIZE		(UINT64_C(2) << 20)	/* PMD size on x86-64 */
/* Unselected address space between spans that one ioctl may walk over. */
#define SCAN_MERGE_GAP		(UINT64_C(256) << 20)

static int add_run(struct page_scan *ps, uint64_t start, uint64_t end, unsigned int flags)
{
	struct page_run *last = ps->nruns ? &ps->runs[ps->nruns - 1] : NULL;

	if (!flags || start >= end)
		return 0;
	if (last && last->end == start && last->flags == flags) {
		last->end = end;
		return 0;
	}
	if (ps->nruns == ps->alloc) {
		size_t alloc = ps->alloc ? ps->alloc * 2 : 1024;
		struct page_run *runs = realloc(ps->runs, alloc * sizeof(*runs));

		if (!runs)
			return -ENOMEM;
		ps->runs = runs;
		ps->alloc = alloc;
	}
	ps->runs[ps->nruns++] = (struct page_run) { start, end, flags };
	return 0;
}

/* The PFN of the shared zero page, learnt from a page of our own. */
static uint64_t find_zero_pfn(uint64_t page_size)
{
	volatile const char *page;
	uint64_t entry = 0, pfn = 0;
	int fd;

	page = mmap(NULL, page_size, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (page == MAP_FAILED)
		return 0;
	(void) page[0];		/* a read fault maps the zero page */
	fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		off_t off = (off_t) ((uintptr_t) page / page_size * sizeof(entry));

		if (pread(fd, &entry, sizeof(entry), off) == sizeof(entry) && (entry & PM_PRESENT))
			pfn = entry & PM_PFN_MASK;
		close(fd);
	}
	munmap((void *) page, page_size);
	return pfn;
}

int page_scan_open(struct page_scan *ps, int procfd, uint64_t page_size)
{
	const char *mode = getenv(MEASURE_ENV);

	memset(ps, 0, sizeof(*ps));
	ps->page_size = page_size;
	ps->kpageflags_fd = -1;
	ps->pagemap_fd = openat(procfd, "pagemap", O_RDONLY | O_CLOEXEC);
	if (ps->pagemap_fd < 0)
		return -errno;
	if (mode && strcmp(mode, "read") == 0) {
		ps->tried_ioctl = true;
		ps->use_ioctl = false;
	}
	return 0;
}

void page_scan_close(struct page_scan *ps)
{
	if (ps->pagemap_fd >= 0)
		close(ps->pagemap_fd);
	if (ps->kpageflags_fd >= 0)
		close(ps->kpageflags_fd);
	free(ps->runs);
	memset(ps, 0, sizeof(*ps));
	ps->pagemap_fd = ps->kpageflags_fd = -1;
}

static int scan_ioctl(struct page_scan *ps, uint64_t start, uint64_t end)
{
	static struct page_region vec[SCAN_VEC_LEN];
	struct pm_scan_arg arg;

	while (start < end) {
		long n, i;

		memset(&arg, 0, sizeof(arg));
		arg.size = sizeof(arg);
		arg.start = start;
		arg.end = end;
		arg.vec = (uintptr_t) vec;
		arg.vec_len = SCAN_VEC_LEN;
		arg.category_anyof_mask = PAGE_IS_PRESENT | PAGE_IS_SWAPPED;
		arg.return_mask = PAGE_IS_PRESENT | PAGE_IS_SWAPPED | PAGE_IS_PFNZERO | PAGE_IS_HUGE;

		n = ioctl(ps->pagemap_fd, PAGEMAP_SCAN, &arg);
		if (n < 0)
			return -errno;
		for (i = 0; i < n; i++) {
			uint64_t cat = vec[i].categories;
			unsigned int flags = 0;
			int rc;

			/* smaps does not count the shared zero page in Rss */
			if ((cat & PAGE_IS_PRESENT) && !(cat & PAGE_IS_PFNZERO)) {
				flags |= RUN_PRESENT;
				if (cat & PAGE_IS_HUGE)
					flags |= RUN_HUGE;
			}
			if (cat & PAGE_IS_SWAPPED)
				flags |= RUN_SWAPPED;
			rc = add_run(ps, vec[i].start, vec[i].end, flags);
			if (rc)
				return rc;
		}
		if (arg.walk_end <= start)
			break;
		start = arg.walk_end;
	}
	return 0;
}

static bool is_thp(struct page_scan *ps, uint64_t pfn)
{
	uint64_t flags;

	if (ps->kpageflags_fd < 0)
		return false;
	if (pread(ps->kpageflags_fd, &flags, sizeof(flags),
		  (off_t) (pfn * sizeof(flags))) != sizeof(flags))
		return false;
	return flags & (UINT64_C(1) << KPF_THP);
}

/*
 * The fallback: 8-byte entries, one per page.  A huge page shows as 512
 * present entries with consecutive PFNs from an aligned first one whose
 * /proc/kpageflags has KPF_THP; that needs the PFNs, so root.
 */
static int scan_entries(struct page_scan *ps, uint64_t start, uint64_t end)
{
	const uint64_t per_huge = HUGE_SIZE / ps->page_size;
	uint64_t entries[4096];
	uint64_t block, from = start & ~(HUGE_SIZE - 1);

	for (block = from; block < end; block += sizeof(entries) / sizeof(entries[0]) * ps->page_size) {
		uint64_t count = sizeof(entries) / sizeof(entries[0]), i;
		ssize_t got;

		if ((end - block) / ps->page_size < count)
			count = (end - block + ps->page_size - 1) / ps->page_size;
		/* whole huge windows, so that a huge page can be seen at once */
		count = (count + per_huge - 1) / per_huge * per_huge;
		if (count > sizeof(entries) / sizeof(entries[0]))
			count = sizeof(entries) / sizeof(entries[0]);

		got = pread(ps->pagemap_fd, entries, count * sizeof(entries[0]),
			    (off_t) (block / ps->page_size * sizeof(entries[0])));
		if (got < 0)
			return -errno;
		count = (uint64_t) got / sizeof(entries[0]);
		if (count == 0)
			break;

		for (i = 0; i < count; i++) {
			uint64_t addr = block + i * ps->page_size, e = entries[i];
			uint64_t pfn = e & PM_PFN_MASK, run_end, j;
			unsigned int flags = 0;
			int rc;

			if (e & PM_PRESENT) {
				if (!ps->zero_pfn || pfn != ps->zero_pfn)
					flags = RUN_PRESENT;
				if (flags && i % per_huge == 0 && i + per_huge <= count
				    && pfn && pfn % per_huge == 0) {
					for (j = 1; j < per_huge; j++)
						if (!(entries[i + j] & PM_PRESENT)
						    || (entries[i + j] & PM_PFN_MASK) != pfn + j)
							break;
					if (j == per_huge && is_thp(ps, pfn)) {
						uint64_t s = addr < start ? start : addr;

						run_end = addr + HUGE_SIZE < end ? addr + HUGE_SIZE : end;
						rc = add_run(ps, s, run_end, RUN_PRESENT | RUN_HUGE);
						if (rc)
							return rc;
						i += per_huge - 1;
						continue;
					}
				}
			} else if (e & PM_SWAPPED) {
				flags = RUN_SWAPPED;
			}
			if (addr < start || addr >= end)
				continue;
			rc = add_run(ps, addr, addr + ps->page_size, flags);
			if (rc)
				return rc;
		}
	}
	return 0;
}

static int scan_fallback_setup(struct page_scan *ps)
{
	if (ps->zero_pfn == 0)
		ps->zero_pfn = find_zero_pfn(ps->page_size);
	if (ps->kpageflags_fd < 0)
		ps->kpageflags_fd = open("/proc/kpageflags", O_RDONLY | O_CLOEXEC);
	/* pagemap shows PFNs to CAP_SYS_ADMIN only, in our own pagemap too:
	 * without them no page is seen to be huge, or to be the zero page */
	ps->pfns_hidden = ps->zero_pfn == 0 || ps->kpageflags_fd < 0;
	return 0;
}

int page_scan(struct page_scan *ps, const struct span *spans, size_t nspans)
{
	size_t i = 0;
	int rc = 0;

	ps->nruns = 0;
	if (!ps->tried_ioctl && nspans) {
		/* one try tells whether this kernel has PAGEMAP_SCAN */
		ps->tried_ioctl = true;
		rc = scan_ioctl(ps, spans[0].start, spans[0].end);
		if (rc == -ENOTTY || rc == -EINVAL) {
			ps->nruns = 0;
		} else if (rc) {
			return rc;
		} else {
			ps->use_ioctl = true;
			i = 1;
		}
	}
	if (ps->use_ioctl) {
		while (i < nspans) {
			uint64_t start = spans[i].start, end = spans[i].end;

			/* one walk over nearby spans costs less than a call each */
			while (++i < nspans && spans[i].start - end <= SCAN_MERGE_GAP)
				end = spans[i].end;
			rc = scan_ioctl(ps, start, end);
			if (rc)
				return rc;
		}
		return 0;
	}

	scan_fallback_setup(ps);
	for (i = 0; i < nspans; i++) {
		rc = scan_entries(ps, spans[i].start, spans[i].end);
		if (rc)
			return rc;
	}
	return 0;
}

void page_scan_sum(struct page_scan *ps, uint64_t start, uint64_t end,
		   struct residency *res)
{
	size_t lo = 0, hi = ps->nruns;

	memset(res, 0, sizeof(*res));
	/* pieces come in address order: where the last one stopped is the place */
	if (ps->next_run <= ps->nruns
	    && (ps->next_run == 0 || ps->runs[ps->next_run - 1].end <= start)
	    && (ps->next_run == ps->nruns || ps->runs[ps->next_run].end > start))
		lo = hi = ps->next_run;
	/* else the first run that ends above start */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (ps->runs[mid].end <= start)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (; lo < ps->nruns && ps->runs[lo].start < end; lo++) {
		const struct page_run *r = &ps->runs[lo];
		uint64_t s = r->start > start ? r->start : start;
		uint64_t e = r->end < end ? r->end : end;
		uint64_t bytes = e - s;

		if (r->flags & RUN_PRESENT)
			res->rss += bytes;
		if (r->flags & RUN_SWAPPED)
			res->swap += bytes;
		if (r->flags & RUN_HUGE)
			res->huge += bytes;
	}
	/* the last run may reach into the next piece */
	ps->next_run = lo && ps->runs[lo - 1].end > end ? lo - 1 : lo;
}

static int smaps_cmp(const void *a, const void *b)
{
	const struct smaps_fields *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

/* "rd wr mr mw me lo ac ..." (two letters each) */
static unsigned int parse_vmflags(const char *text)
{
	static const struct { char name[3]; unsigned int flag; } known[] = {
		{ "lo", VMF_LOCKED }, { "pf", VMF_PFNMAP }, { "io", VMF_IO }, { "ht", VMF_HUGETLB },
	};
	unsigned int flags = 0;
	size_t i;

	while (*text) {
		while (*text == ' ')
			text++;
		for (i = 0; i < sizeof(known) / sizeof(known[0]); i++)
			if (text[0] == known[i].name[0] && text[1] == known[i].name[1]
			    && (text[2] == ' ' || text[2] == '\n' || text[2] == '\0'))
				flags |= known[i].flag;
		while (*text && *text != ' ')
			text++;
	}
	return flags;
}

/*
 * Referenced:, KSM: and VmFlags: of every mapping.  Mapping headers are the lines
 * whose first word is START-END; field lines start with a capital letter.
 */
int read_smaps_fields(int procfd, struct smaps_fields **result, size_t *count)
{
	struct smaps_fields *list = NULL, *cur = NULL;
	size_t n = 0, alloc = 0, len = 0;
	char *line = NULL;
	FILE *f;
	int fd;

	fd = openat(procfd, "smaps", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	f = fdopen(fd, "r");
	if (!f) {
		close(fd);
		return -ENOMEM;
	}
	while (getline(&line, &len, f) >= 0) {
		unsigned long long a, b;
		char dash;

		if (line[0] >= 'A' && line[0] <= 'Z') {
			if (!cur)
				continue;
			if (strncmp(line, "Referenced:", 11) == 0)
				cur->referenced = strtoull(line + 11, NULL, 10) * 1024;
			else if (strncmp(line, "KSM:", 4) == 0) {
				cur->ksm = strtoull(line + 4, NULL, 10) * 1024;
				cur->has_ksm = true;
			} else if (strncmp(line, "VmFlags:", 8) == 0) {
				cur->vmflags = parse_vmflags(line + 8);
			}
			continue;
		}
		if (sscanf(line, "%llx%c%llx", &a, &dash, &b) != 3 || dash != '-')
			continue;
		if (n == alloc) {
			struct smaps_fields *l;

			alloc = alloc ? alloc * 2 : 256;
			l = realloc(list, alloc * sizeof(*l));
			if (!l) {
				free(list);
				free(line);
				fclose(f);
				return -ENOMEM;
			}
			list = l;
		}
		cur = &list[n++];
		memset(cur, 0, sizeof(*cur));
		cur->start = a;
		cur->end = b;
	}
	free(line);
	fclose(f);
	if (n > 1)
		qsort(list, n, sizeof(*list), smaps_cmp);
	*result = list;
	*count = n;
	return 0;
}

const struct smaps_fields *find_smaps_fields(const struct smaps_fields *list, size_t n,
					     uint64_t start)
{
	struct smaps_fields key = { .start = start };

	return n ? bsearch(&key, list, n, sizeof(*list), smaps_cmp) : NULL;
}

const char *page_scan_method(const struct page_scan *ps)
{
	return ps->use_ioctl ? "PAGEMAP_SCAN" : "pagemap";
}
