/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * scols-only - what libsmartcols alone costs to print pmadvise's default
 * table: the rows of `pmadvise -p PID cold --select all` (every mapping
 * advised in full, status ok), from a saved copy of /proc/PID/maps, in the
 * same columns with the same flags, so that the output is the same bytes.
 *
 * Usage: scols-only [-J] MAPS_FILE
 *
 * The reference for pmadvise's table and -J runs in tests/bench/run.sh:
 * one cell string made per cell and handed to libsmartcols, as a small
 * util-linux tool would.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libsmartcols.h>

static const struct {
	const char *name;
	double whint;
	int flags;
} columns[] = {
	{ "START",  12, SCOLS_FL_RIGHT },
	{ "END",    12, SCOLS_FL_RIGHT },
	{ "SIZE",    5, SCOLS_FL_RIGHT },
	{ "PERMS",   4, 0 },
	{ "ADVISED", 5, SCOLS_FL_RIGHT },
	{ "STATUS",  7, 0 },
	{ "PATH",  0.3, SCOLS_FL_TRUNC },
};

/* "4K", "1.5M": pmadvise's human form */
static void human(uint64_t bytes, char *buf, size_t len)
{
	const char *units = "BKMGTPE";
	uint64_t rest = 0;

	while (bytes >= 1024 && units[1]) {
		rest = bytes % 1024;
		bytes /= 1024;
		units++;
	}
	rest = (rest * 10 + 512) / 1024;
	if (rest > 9)
		rest = 9;
	if (rest && *units != 'B')
		snprintf(buf, len, "%llu.%llu%c", (unsigned long long) bytes,
			 (unsigned long long) rest, *units);
	else
		snprintf(buf, len, "%llu%c", (unsigned long long) bytes, *units);
}

int main(int argc, char **argv)
{
	struct libscols_table *tb = scols_new_table();
	int json = argc == 3 && strcmp(argv[1], "-J") == 0;
	size_t alloc = 0, i;
	char *line = NULL;
	FILE *maps;

	maps = fopen(argv[argc - 1], "r");
	if (argc < 2 || !maps || !tb) {
		fprintf(stderr, "Usage: scols-only [-J] MAPS_FILE\n");
		return EXIT_FAILURE;
	}
	scols_table_enable_json(tb, json);
	scols_table_set_name(tb, "pmadvise");
	for (i = 0; i < sizeof(columns) / sizeof(columns[0]); i++) {
		struct libscols_column *cl = scols_table_new_column(tb, columns[i].name,
						columns[i].whint, columns[i].flags);

		if (!cl)
			return EXIT_FAILURE;
		if (json)
			scols_column_set_json_type(cl, SCOLS_JSON_STRING);
	}
	while (getline(&line, &alloc, maps) > 0) {
		unsigned long long start, end;
		struct libscols_line *ln;
		char perms[8], text[32], *path;
		int pathpos = 0;

		line[strcspn(line, "\n")] = '\0';
		if (sscanf(line, "%llx-%llx %7s %*s %*s %*s%n", &start, &end, perms, &pathpos) < 3
		    || !pathpos)
			continue;
		path = line + pathpos + strspn(line + pathpos, " ");
		if (!strcmp(path, "[vvar]") || !strcmp(path, "[vvar_vclock]")
		    || !strcmp(path, "[vsyscall]"))
			continue;
		ln = scols_table_new_line(tb, NULL);
		if (!ln)
			return EXIT_FAILURE;
		snprintf(text, sizeof(text), "%llx", start);
		scols_line_set_data(ln, 0, text);
		snprintf(text, sizeof(text), "%llx", end);
		scols_line_set_data(ln, 1, text);
		human(end - start, text, sizeof(text));
		scols_line_set_data(ln, 2, text);
		scols_line_set_data(ln, 3, perms);
		scols_line_set_data(ln, 4, text);
		scols_line_set_data(ln, 5, "ok");
		if (*path)
			scols_line_set_data(ln, 6, path);
	}
	free(line);
	fclose(maps);
	scols_print_table(tb);
	scols_unref_table(tb);
	return EXIT_SUCCESS;
}
