/*
 * compat-tests/common/check.h: the PASS/FAIL lines of a test program that a
 * suite's run.sh reads (soft/semantics.c, soft/rxe-diffs.c, soft/wakeup.c, soft/acks.c).
 *
 *   check(ok, name, why)   prints "PASS name" or "FAIL name: why" (and
 *                          counts the failure in `failures`), flushed at
 *                          once so that a later crash keeps what was printed
 *   die(what)              perror(what), exit status 2: the test could not
 *                          be set up (not a verdict)
 *
 * Header only (static functions), included once by each program.
 */
#ifndef COMPAT_TESTS_CHECK_H
#define COMPAT_TESTS_CHECK_H

#include <stdio.h>
#include <stdlib.h>

static int failures;

static void check(int ok, const char *name, const char *why)
{
	if (ok)
		printf("PASS %s\n", name);
	else {
		printf("FAIL %s: %s\n", name, why);
		failures++;
	}
	fflush(stdout);
}

static void die(const char *m)
{
	perror(m);
	exit(2);
}

#endif
