/*
 * A provider built for another private ABI generation: its constructor
 * registers through verbs_register_driver_57@IBVERBS_PRIVATE_57, which
 * rdma-core 44 (and this library) does not define, so loading it must fail
 * and the failure must be explained.
 */
struct verbs_device_ops;
void verbs_register_driver_57(const struct verbs_device_ops *ops);

__attribute__((constructor)) static void fake57_init(void)
{
	verbs_register_driver_57((const struct verbs_device_ops *)0);
}
