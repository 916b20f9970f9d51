/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Selection: the pieces of each target that RANGEs, --maps, selectors
 * and rules choose.
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

#include "pmadvise.h"
#include "escape.h"

/*
 * Selection
 */
static struct piece *new_piece(struct target *t, uint64_t start, uint64_t end,
			       const struct maps_entry *mapping)
{
	struct piece *pc;

	/* the array doubles from 256 rows: full at 256, 512, 1024 ... */
	if (t->npieces == 0 || (t->npieces >= 256 && !(t->npieces & (t->npieces - 1))))
		t->pieces = xreallocarray(t->pieces, t->npieces ? t->npieces * 2 : 256,
					  sizeof(*t->pieces));
	pc = &t->pieces[t->npieces++];
	memset(pc, 0, sizeof(*pc));
	pc->start = start;
	pc->end = end;
	pc->mapping = mapping;
	pc->status = ST_PENDING;
	if (!mapping) {
		pc->status = ST_UNMAPPED;
		pc->error = ENOMEM;
		pc->reason = "nothing is mapped here";
	}
	return pc;
}

static bool wanted_mapping(const struct pmadvise *ctl, const struct maps_entry *m)
{
	size_t i;

	if (ctl->nselects) {
		for (i = 0; i < ctl->nselects; i++)
			if (selector_matches(&ctl->selects[i], m))
				break;
		if (i == ctl->nselects)
			return false;
	}
	for (i = 0; i < ctl->nexcludes; i++)
		if (selector_matches(&ctl->excludes[i], m))
			return false;
	return true;
}

/* The first mapping that ends above addr. */
static size_t first_mapping_after(const struct target *t, uint64_t addr)
{
	size_t lo = 0, hi = t->nmaps;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (t->maps[mid].end <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static void select_range(struct pmadvise *ctl, struct target *t, const struct range *r)
{
	uint64_t start = r->start, end = r->end, at;
	size_t i = first_mapping_after(t, start);

	if (r->form == RANGE_MAPPING) {
		if (i < t->nmaps && t->maps[i].start <= start) {
			const struct maps_entry *m = &t->maps[i];

			if (wanted_mapping(ctl, m))
				new_piece(t, m->start, m->end, m);
		} else {
			start &= ~(ctl->page_size - 1);
			new_piece(t, start, start + ctl->page_size, NULL);
		}
		return;
	}

	for (at = start; at < end; i++) {
		const struct maps_entry *m = i < t->nmaps ? &t->maps[i] : NULL;
		uint64_t piece_end;

		if (!m || m->start >= end) {
			new_piece(t, at, end, NULL);
			break;
		}
		if (m->start > at) {
			new_piece(t, at, m->start, NULL);
			at = m->start;
		}
		piece_end = m->end < end ? m->end : end;
		if (wanted_mapping(ctl, m))
			new_piece(t, at, piece_end, m);
		at = piece_end;
	}
}

/* Where a range rule applies in this target; false if nowhere. */
static bool rule_span(const struct pmadvise *ctl, const struct target *t,
		      const struct rule *rule, uint64_t *start, uint64_t *end)
{
	if (rule->range.form == RANGE_MAPPING) {
		size_t i = first_mapping_after(t, rule->range.start);

		if (i == t->nmaps || t->maps[i].start > rule->range.start) {
			*start = rule->range.start & ~(ctl->page_size - 1);
			*end = *start + ctl->page_size;
			return false;
		}
		*start = t->maps[i].start;
		*end = t->maps[i].end;
		return true;
	}
	*start = rule->range.start;
	*end = rule->range.end;
	return true;
}

static void add_rule_piece(struct pmadvise *ctl, struct target *t, const struct piece *from,
			   uint64_t start, uint64_t end, size_t r, bool selected)
{
	struct piece *pc = new_piece(t, start, end, from->mapping);

	pc->advice = &ctl->rules[r].advice;
	pc->rule = (unsigned int) (r + 1);
	pc->selected = selected;
	ctl->rules[r].matches++;
}

/*
 * [start, end) of a candidate piece takes the advice of the first rule from
 * `r` on that selects it; a range rule splits it, and the parts outside the
 * range go on to the later rules.
 */
static void assign_rules(struct pmadvise *ctl, struct target *t, const struct piece *from,
			 uint64_t start, uint64_t end, size_t r)
{
	for (; r < ctl->nrules; r++) {
		const struct rule *rule = &ctl->rules[r];
		uint64_t rs, re;

		if (!rule->is_range) {
			if (selector_matches(&rule->sel, from->mapping)) {
				add_rule_piece(ctl, t, from, start, end, r, from->selected);
				return;
			}
			continue;
		}
		if (!rule_span(ctl, t, rule, &rs, &re) || re <= start || rs >= end)
			continue;
		if (start < rs)
			assign_rules(ctl, t, from, start, rs, r + 1);
		add_rule_piece(ctl, t, from, rs > start ? rs : start, re < end ? re : end, r, false);
		if (re < end)
			assign_rules(ctl, t, from, re, end, r + 1);
		return;
	}
}

static int piece_cmp(const void *a, const void *b)
{
	const struct piece *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->rule < y->rule ? -1 : x->rule > y->rule;
}

static void add_rule_hole(struct target *t, uint64_t start, uint64_t end,
			  const struct rule *rule, size_t r)
{
	struct piece *pc = new_piece(t, start, end, NULL);

	pc->advice = &rule->advice;
	pc->rule = (unsigned int) (r + 1);
}

/* The unmapped parts of range rules, as rows (only where nothing bounds the rules). */
static void add_rule_holes(struct pmadvise *ctl, struct target *t)
{
	size_t r;

	for (r = 0; r < ctl->nrules; r++) {
		const struct rule *rule = &ctl->rules[r];
		uint64_t rs, re, at;
		size_t i;

		if (!rule->is_range)
			continue;
		if (!rule_span(ctl, t, rule, &rs, &re)) {
			add_rule_hole(t, rs, re, rule, r);
			continue;
		}
		for (at = rs, i = first_mapping_after(t, rs); at < re; i++) {
			uint64_t next = i < t->nmaps && t->maps[i].start < re ? t->maps[i].start : re;

			if (next > at)
				add_rule_hole(t, at, next, rule, r);
			if (i >= t->nmaps || next >= re)
				break;
			at = t->maps[i].end;
		}
	}
}

static void apply_rules(struct pmadvise *ctl, struct target *t)
{
	struct piece *candidates = t->pieces;
	size_t ncandidates = t->npieces, i;

	t->pieces = NULL;
	t->npieces = 0;
	for (i = 0; i < ncandidates; i++) {
		const struct piece *c = &candidates[i];

		if (c->mapping)
			assign_rules(ctl, t, c, c->start, c->end, 0);
		else {
			struct piece *hole = new_piece(t, c->start, c->end, NULL);

			*hole = *c;
			hole->advice = NULL;
		}
	}
	free(candidates);
	if (!ctl->nranges && !ctl->nselects)
		add_rule_holes(ctl, t);
	if (t->npieces > 1)
		qsort(t->pieces, t->npieces, sizeof(*t->pieces), piece_cmp);
}

void select_pieces(struct pmadvise *ctl, struct target *t)
{
	size_t i;

	if (ctl->nranges) {
		for (i = 0; i < ctl->nranges; i++)
			select_range(ctl, t, &ctl->ranges[i]);
	} else {
		for (i = 0; i < t->nmaps; i++) {
			const struct maps_entry *m = &t->maps[i];

			if (is_special_mapping(m) || !wanted_mapping(ctl, m))
				continue;
			new_piece(t, m->start, m->end, m)->selected = true;
		}
	}
	for (i = 0; i < t->npieces; i++)
		t->pieces[i].advice = &ctl->advice;
	if (ctl->nrules)
		apply_rules(ctl, t);
}

char *describe_selection(const struct pmadvise *ctl)
{
	size_t len = 0, i;
	char *text = NULL;
	FILE *f = open_memstream(&text, &len);

	if (!f)
		err(EXIT_FAILURE, "cannot allocate memory");
	if (ctl->nranges)
		fprintf(f, "%zu range%s", ctl->nranges, ctl->nranges == 1 ? "" : "s");
	for (i = 0; i < ctl->nselects; i++)
		fprintf(f, "%s--select '%s'", ftell(f) ? " " : "", esc(ctl->selects[i].text));
	for (i = 0; i < ctl->nexcludes; i++)
		fprintf(f, "%s--exclude '%s'", ftell(f) ? " " : "", esc(ctl->excludes[i].text));
	for (i = 0; i < ctl->nrules; i++)
		fprintf(f, "%s--rule '%s'", ftell(f) ? " " : "", esc(ctl->rules[i].text));
	fclose(f);
	return text;
}
