/*
 * vm-sweep case (included by sweep.c): what a context leaves behind.
 * Written for this project (not from rdma-core).
 *
 * emfile_open_close_cycle: 50 times, open contexts of the device until
 * ibv_open_device fails (RLIMIT_NOFILE a few dozen above what the process
 * holds, and 0-7 more descriptors taken each cycle so that the failure
 * falls on another step of the open), then close them all.  Afterwards the
 * process must hold the descriptors it held before its first context
 * (/proc/self/fd) and the user's private directory of the software device
 * (<XDG_RUNTIME_DIR or /tmp>/ibverbs-soft-<uid>; none on rxe) the same
 * endpoint files and no other (the id counter `ids` and the devices'
 * description directories, made by the first context, stay).  DETAIL: cycles=N errno=<the errnos of the failed opens>
 * fds_left=N (descriptors more than before) files_left=N (names that were
 * not there before): 0 and 0 when nothing is left behind.
 */

#define CYCLES 50

/* new_entries() and soft_dir(): compat-tests/common/entries.h (sweep.c) */

C(emfile_open_close_cycle, F_NODEV | F_SLOW)
{
	static char files0[1 << 16] = "\n";
	char dir[256], b[160];
	struct ibv_device *dev = NULL;
	struct rlimit orig, lim;
	static struct ibv_context *ctx[512];
	char errs[96] = "";
	for (int i = 0; e->list[i]; i++)
		if (!strcmp(ibv_get_device_name(e->list[i]), e->devname))
			dev = e->list[i];
	if (!dev) {
		errno = ENODEV;
		setup_fail("device");
	}
	soft_dir(dir, sizeof(dir));
	if (getrlimit(RLIMIT_NOFILE, &orig))
		setup_fail("getrlimit");
	int fds0 = new_entries("/proc/self/fd", NULL, NULL, 0);
	new_entries(dir, NULL, files0 + 1, sizeof(files0) - 1);
	for (int k = 0; k < CYCLES; k++) {
		int extra[8], n = 0, err = 0;
		lim = orig;
		lim.rlim_cur = fds0 + 48;
		for (int i = 0; i < k % 8; i++)
			extra[i] = dup(0);
		if (setrlimit(RLIMIT_NOFILE, &lim))
			setup_fail("setrlimit");
		while (n < 512 && (ctx[n] = ibv_open_device(dev)))
			n++;
		err = errno;
		if (setrlimit(RLIMIT_NOFILE, &orig))
			setup_fail("setrlimit");
		for (int i = 0; i < n; i++)
			ibv_close_device(ctx[i]);
		for (int i = 0; i < k % 8; i++)
			close(extra[i]);
		/* the errnos seen, each once, in the order first seen */
		char w[40];
		snprintf(w, sizeof(w), "%s%s", errs[0] ? "," : "", ename(err));
		if (!strstr(errs, w + (errs[0] ? 1 : 0)) && strlen(errs) + strlen(w) < sizeof(errs))
			strcat(errs, w);
	}
	snprintf(b, sizeof(b), "cycles=%d errno=%s fds_left=%d files_left=%d", CYCLES,
		 errs, new_entries("/proc/self/fd", NULL, NULL, 0) - fds0,
		 new_entries(dir, files0, NULL, 0));
	out("cycle", b);
}
