/*
 * The driver models, found by the ibdev name's prefix (mlx5_0 -> mlx5).
 * Each drv_<name>.c defines one `struct sti_driver sti_drv_<name>`; a
 * driver without a model file gets its identity from the table below and
 * no driver data (every udata response left zero, every mmap allowed).
 */
#include <string.h>
#include <rdma/ib_user_ioctl_verbs.h>

#include "standin.h"

#define MODEL(n) extern const struct sti_driver sti_drv_##n __attribute__((weak));
MODEL(rxe) MODEL(mlx5) MODEL(mlx4) MODEL(efa) MODEL(irdma) MODEL(bnxt_re) MODEL(hns) MODEL(erdma)
MODEL(mana) MODEL(qedr) MODEL(cxgb4) MODEL(ocrdma) MODEL(vmw_pvrdma) MODEL(siw) MODEL(mthca) MODEL(hfi1)
MODEL(qib) MODEL(ionic)
#undef MODEL

static const struct sti_driver *const models[] = {
	&sti_drv_rxe, &sti_drv_mlx5, &sti_drv_mlx4, &sti_drv_efa, &sti_drv_irdma, &sti_drv_bnxt_re,
	&sti_drv_hns, &sti_drv_erdma, &sti_drv_mana, &sti_drv_qedr, &sti_drv_cxgb4, &sti_drv_ocrdma,
	&sti_drv_vmw_pvrdma, &sti_drv_siw, &sti_drv_mthca, &sti_drv_hfi1, &sti_drv_qib, &sti_drv_ionic,
};

/* Identities (driver id, PCI vendor/device, node type, link layer) of the
 * drivers whose model is only that. */
#define ID(n, id, v, p, nt, ll) { .name = n, .driver_id = id, .vendor_id = v, .vendor_part_id = p, .node_type = nt, .link_layer = ll }
static const struct sti_driver plain[] = {
	ID("mlx5", RDMA_DRIVER_MLX5, 0x02c9, 4115, 1, 2),
	ID("mlx4", RDMA_DRIVER_MLX4, 0x02c9, 4099, 1, 1),
	ID("mthca", RDMA_DRIVER_MTHCA, 0x02c9, 25218, 1, 1),
	ID("bnxt_re", RDMA_DRIVER_BNXT_RE, 0x14e4, 0x1614, 1, 2),
	ID("cxgb4", RDMA_DRIVER_CXGB4, 0x1425, 0x5401, 4, 2),
	ID("efa", RDMA_DRIVER_EFA, 0x1d0f, 0xefa0, 1, 0),
	ID("erdma", RDMA_DRIVER_ERDMA, 0x1ded, 0x107f, 4, 2),
	ID("hfi1", RDMA_DRIVER_HFI1, 0x8086, 0x24f0, 1, 1),
	ID("hns", RDMA_DRIVER_HNS, 0x19e5, 0xa222, 1, 2),
	ID("qib", RDMA_DRIVER_QIB, 0x1077, 0x7322, 1, 1),
	ID("irdma", RDMA_DRIVER_IRDMA, 0x8086, 0x124c, 4, 2),
	ID("ocrdma", RDMA_DRIVER_OCRDMA, 0x10df, 0x0720, 1, 2),
	ID("qedr", RDMA_DRIVER_QEDR, 0x1077, 0x1629, 1, 2),
	ID("vmw_pvrdma", RDMA_DRIVER_VMW_PVRDMA, 0x15ad, 0x0820, 1, 2),
	ID("siw", RDMA_DRIVER_SIW, 0x626d74, 0, 4, 2),
	ID("mana", 20 /* RDMA_DRIVER_MANA */, 0x1414, 0x00ba, 1, 2),
	ID("generic", RDMA_DRIVER_UNKNOWN, 0, 0, 1, 1),
};
#undef ID

static int prefix(const char *name, const char *p)
{
	size_t n = strlen(p);
	return !strncmp(name, p, n) && (!name[n] || name[n] == '_' || (name[n] >= '0' && name[n] <= '9'));
}

const struct sti_driver *sti_driver_find(const char *ibdev)
{
	for (size_t i = 0; i < sizeof(models) / sizeof(models[0]); i++)
		if (models[i] && prefix(ibdev, models[i]->name))
			return models[i];
	for (size_t i = 0; i < sizeof(plain) / sizeof(plain[0]); i++)
		if (prefix(ibdev, plain[i].name))
			return &plain[i];
	return &plain[sizeof(plain) / sizeof(plain[0]) - 1];
}
