/*
 * What a developer builds with Debian's libibverbs-dev: the verbs header
 * and the direct-verbs headers of mlx5, mlx4, efa and mana, linked with
 * what pkg-config gives for libibverbs, libmlx5, libmlx4, libefa and
 * libmana.  It lists the devices (with mlx5dv_is_supported for each); one
 * function of every direct-verbs library is referenced, so the link needs
 * all of them.
 */
#include <stdio.h>
#include <infiniband/verbs.h>
#include <infiniband/mlx5dv.h>
#include <infiniband/mlx4dv.h>
#include <infiniband/efadv.h>
#include <infiniband/manadv.h>

int main(int argc, char **argv)
{
	struct ibv_device **list;
	int n = 0, i;

	(void)argv;
	if (argc > 5) {
		/* never taken: the references that need each library */
		mlx4dv_query_device(NULL, NULL);
		efadv_query_device(NULL, NULL, 0);
		manadv_set_context_attr(NULL, 0, NULL);
	}
	list = ibv_get_device_list(&n);
	if (!list) {
		perror("ibv_get_device_list");
		return 1;
	}
	for (i = 0; i < n; i++)
		printf("%s mlx5dv_is_supported=%d\n", ibv_get_device_name(list[i]),
		       (int)mlx5dv_is_supported(list[i]));
	ibv_free_device_list(list);
	return 0;
}
