/*
 * compat-tests/common/opendev.h: opening a device by name, shared by the
 * compat-tests programs (soft/acks.c, bench/shared_ref.c).
 *
 *   struct ibv_context *ctx = open_device_named("swr0");
 *
 * NULL when the list cannot be had or the open failed (errno as the
 * library left it), or no device has that name (ENODEV).  Header only (static inline); the
 * device list is freed before it returns (an open context keeps its
 * device).
 */
#ifndef COMPAT_TESTS_OPENDEV_H
#define COMPAT_TESTS_OPENDEV_H

#include <errno.h>
#include <infiniband/verbs.h>
#include <string.h>

static inline struct ibv_context *open_device_named(const char *name)
{
	int n = 0, found = 0;
	struct ibv_context *ctx = NULL;
	struct ibv_device **l = ibv_get_device_list(&n);
	for (int i = 0; l && i < n && !found; i++)
		if (!strcmp(ibv_get_device_name(l[i]), name)) {
			found = 1;
			ctx = ibv_open_device(l[i]);
		}
	if (l)
		ibv_free_device_list(l);
	if (l && !found)
		errno = ENODEV;
	return ctx;
}

#endif
