/* Link-time stand-in for a libibverbs.so.1 of private ABI 57 (stub57.map). */
struct verbs_device_ops;
void verbs_register_driver_57(const struct verbs_device_ops *ops)
{
	(void)ops;
}
