/* compat-tests/install: a small consumer of the installed library.
 * Calls ibv_get_device_list/ibv_free_device_list, exercises a few inline
 * functions of <infiniband/verbs.h>, and prints which shared object
 * provides ibv_get_device_list at run time. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <infiniband/verbs.h>

static int n_start, n_complete;

static void my_wr_start(struct ibv_qp_ex *qp)
{
	(void)qp;
	n_start++;
}

static int my_wr_complete(struct ibv_qp_ex *qp)
{
	(void)qp;
	n_complete++;
	return 0;
}

int main(void)
{
	struct ibv_device **list;
	struct ibv_qp_ex qpx;
	struct ibv_cq_ex cqx;
	Dl_info info;
	void *sym;
	int num = -1, i;

	list = ibv_get_device_list(&num);
	if (!list) {
		printf("ibv_get_device_list: NULL (%s)\n", strerror(errno));
	} else {
		printf("devices: %d\n", num);
		for (i = 0; i < num; i++)
			printf("  %s\n", ibv_get_device_name(list[i]));
		ibv_free_device_list(list);
	}

	/* inline functions */
	if (!ibv_is_qpt_supported(1u << IBV_QPT_RC, IBV_QPT_RC) ||
	    ibv_is_qpt_supported(1u << IBV_QPT_RC, IBV_QPT_UD)) {
		printf("ibv_is_qpt_supported: wrong result\n");
		return 1;
	}
	memset(&qpx, 0, sizeof(qpx));
	qpx.wr_start = my_wr_start;
	qpx.wr_complete = my_wr_complete;
	ibv_wr_start(&qpx);
	if (ibv_wr_complete(&qpx) != 0 || n_start != 1 || n_complete != 1) {
		printf("ibv_wr_start/ibv_wr_complete: callbacks not called\n");
		return 1;
	}
	memset(&cqx, 0, sizeof(cqx));
	if (ibv_cq_ex_to_cq(&cqx) != (struct ibv_cq *)&cqx) {
		printf("ibv_cq_ex_to_cq: wrong result\n");
		return 1;
	}

	sym = dlsym(RTLD_DEFAULT, "ibv_get_device_list");
	if (!sym || !dladdr(sym, &info) || !info.dli_fname) {
		printf("dladdr(ibv_get_device_list) failed\n");
		return 1;
	}
	printf("provider-of-ibv_get_device_list: %s\n", info.dli_fname);
	return 0;
}
