/*
 * Runs a script of device-list steps against whichever libibverbs.so.1 the
 * loader picks (ours or Debian's), printing what the library reports.
 *
 *   list      ibv_get_device_list; prints the count (or NULL and errno)
 *             and one line per device
 *   show:N    prints the names of list N again (its pointers must still
 *             be valid, whatever rescans happened since)
 *   free:N    ibv_free_device_list(list N)
 *   sh:CMD    system(CMD) (changes the sysfs fixture between calls)
 *
 * Lists are numbered from 1 in the order they were taken.
 */
#include <endian.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <infiniband/verbs.h>

#define MAX_LISTS 32

static struct ibv_device **lists[MAX_LISTS + 1];
static int nlists;

static void print_dev(int l, int i, struct ibv_device *d)
{
	printf("  %d.%d name=%s dev_name=%s dev_path=%s ibdev_path=%s node_type=%d transport=%d guid=%016llx index=%d\n",
	       l, i, ibv_get_device_name(d), d->dev_name, d->dev_path,
	       d->ibdev_path, (int)d->node_type, (int)d->transport_type,
	       (unsigned long long)be64toh(ibv_get_device_guid(d)),
	       ibv_get_device_index(d));
}

static void do_list(void)
{
	int n = -1, i;
	struct ibv_device **l;

	fflush(stdout);
	errno = 0;
	l = ibv_get_device_list(&n);
	if (nlists == MAX_LISTS) {
		printf("too many lists\n");
		exit(2);
	}
	lists[++nlists] = l;
	if (!l) {
		printf("list %d: NULL num=%d errno=%d (%s)\n", nlists, n, errno,
		       strerror(errno));
		return;
	}
	printf("list %d: num=%d\n", nlists, n);
	for (i = 0; l[i]; i++)
		print_dev(nlists, i, l[i]);
	if (i != n)
		printf("list %d: MISMATCH: %d entries before NULL, num=%d\n",
		       nlists, i, n);
}

static int list_arg(const char *s)
{
	int k = atoi(s);

	if (k < 1 || k > nlists) {
		printf("bad list number %s\n", s);
		exit(2);
	}
	return k;
}

int main(int argc, char **argv)
{
	int a, i;

	setvbuf(stdout, NULL, _IOLBF, 0);
	for (a = 1; a < argc; a++) {
		const char *s = argv[a];

		if (!strcmp(s, "list")) {
			do_list();
		} else if (!strncmp(s, "show:", 5)) {
			int k = list_arg(s + 5);

			printf("show %d:", k);
			for (i = 0; lists[k] && lists[k][i]; i++)
				printf(" %s", ibv_get_device_name(lists[k][i]));
			printf("\n");
		} else if (!strncmp(s, "free:", 5)) {
			int k = list_arg(s + 5);

			if (lists[k])
				ibv_free_device_list(lists[k]);
			lists[k] = NULL;
			printf("free %d\n", k);
		} else if (!strncmp(s, "sh:", 3)) {
			fflush(stdout);
			if (system(s + 3) != 0)
				printf("step failed: %s\n", s + 3);
		} else {
			printf("unknown step %s\n", s);
			return 2;
		}
	}
	fflush(stdout);
	return 0;
}
