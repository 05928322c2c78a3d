/* compat-tests/common/entries.h: what a process leaves behind, counted by
 * the checks that open and close contexts (compat-tests/soft/rxe-diffs.c,
 * compat-tests/vm-sweep/sweep-fds.c).  Written for this project.
 *
 * new_entries(path, known, names, sz): the entries of directory `path`
 * that `known` ("\n"-separated names, starting with "\n"; NULL: any) does
 * not name, counted; `names` (NULL: not wanted) gets them, "\n"-separated,
 * as far as `sz` allows.  Dot entries, the user's id counter `ids` and
 * directories (the devices' sysfs-style trees, made by a user's first
 * context, which stay) are not counted: they are not an endpoint's files.
 *
 * soft_dir(b, sz): the user's private directory of the software device,
 * <XDG_RUNTIME_DIR or /tmp>/ibverbs-soft-<uid> (none on rxe). */
#ifndef COMPAT_TESTS_ENTRIES_H
#define COMPAT_TESTS_ENTRIES_H

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static inline int new_entries(const char *path, const char *known, char *names, size_t sz)
{
	DIR *d = opendir(path);
	struct dirent *de;
	char w[300];
	int n = 0;
	if (names)
		names[0] = 0;
	if (!d)
		return 0;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.' || !strcmp(de->d_name, "ids") || de->d_type == DT_DIR)
			continue;
		snprintf(w, sizeof(w), "\n%s\n", de->d_name);
		if (known && strstr(known, w))
			continue;
		n++;
		if (names && strlen(names) + strlen(w) < sz)
			strcat(names, w + 1);
	}
	closedir(d);
	return n;
}

static inline void soft_dir(char *b, size_t sz)
{
	const char *rt = getenv("XDG_RUNTIME_DIR");
	snprintf(b, sz, "%s/ibverbs-soft-%u", rt && rt[0] == '/' ? rt : "/tmp", (unsigned)getuid());
}

#endif
