/* compat-tests/soft-hardening/report.h: what the suite's C programs share:
 * the PASS/FAIL line run.sh reads, the clock, and opening swr0.
 *
 * `result(ok, fmt, ...)` prints "PASS <test>" or "FAIL <test>: why"; a
 * program that defines RESULT_EXITS before including this header exits
 * with it (0 or 1), the others go on (and remember a failure in `failed`).
 * `die` ends the program with exit status 2. */
#ifndef SOFT_HARDENING_REPORT_H
#define SOFT_HARDENING_REPORT_H
#include <errno.h>
#include <infiniband/verbs.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const char *test_name = "?";
static int failed;

static void result(int ok, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void result(int ok, const char *fmt, ...)
{
	char why[768] = "";
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(why, sizeof why, fmt, ap);
	va_end(ap);
	if (ok) {
		printf("PASS %s\n", test_name);
	} else {
		printf("FAIL %s: %s\n", test_name, why);
		failed = 1;
	}
	fflush(stdout);
#ifdef RESULT_EXITS
	exit(ok ? 0 : 1);
#endif
}

static void die(const char *m)
{
	printf("FAIL %s: %s: %s\n", test_name, m, strerror(errno));
	fflush(stdout);
	exit(2);
}

__attribute__((unused)) static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

__attribute__((unused)) static void msleep(int ms)
{
	usleep(ms * 1000);
}

/* swr0, opened (NULL when there is none or it cannot be opened). */
__attribute__((unused)) static struct ibv_context *try_open(void)
{
	int n;
	struct ibv_device **l = ibv_get_device_list(&n);
	struct ibv_context *c = NULL;
	if (!l)
		return NULL;
	for (int i = 0; i < n; i++)
		if (!strcmp(ibv_get_device_name(l[i]), "swr0"))
			c = ibv_open_device(l[i]);
	ibv_free_device_list(l);
	return c;
}

__attribute__((unused)) static struct ibv_context *open_dev(void)
{
	struct ibv_context *c = try_open();
	if (!c)
		die("open swr0");
	return c;
}
#endif
