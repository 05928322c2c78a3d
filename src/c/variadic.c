/*
 * The two exported functions of the provider ABI that take C varargs.
 * Stable Rust cannot define a variadic function, so these shims format the
 * arguments and hand a finished string to the Rust side.  Nothing else of
 * the library is written in C.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

struct verbs_context;
struct verbs_sysfs_dev;

/* Implemented in Rust (src/log.rs, src/api/misc.rs); local to the .so. */
int ibvrs_log_enabled(uint32_t level);
void ibvrs_log_write(const char *msg, size_t len);
int ibvrs_read_ibdev_sysfs_file(char *buf, size_t size,
				struct verbs_sysfs_dev *sysfs_dev,
				const char *file);

__attribute__((format(printf, 3, 4)))
void __verbs_log(struct verbs_context *ctx, uint32_t level, const char *fmt, ...)
{
	int saved = errno;
	char *msg = NULL;
	va_list ap;
	int n;

	(void)ctx;
	if (!ibvrs_log_enabled(level))
		return;
	va_start(ap, fmt);
	n = vasprintf(&msg, fmt, ap);
	va_end(ap);
	if (n >= 0) {
		ibvrs_log_write(msg, (size_t)n);
		free(msg);
	}
	errno = saved;
}

__attribute__((format(printf, 4, 5)))
int ibv_read_ibdev_sysfs_file(char *buf, size_t size,
			      struct verbs_sysfs_dev *sysfs_dev,
			      const char *fnfmt, ...)
{
	char *file = NULL;
	va_list ap;
	int ret;

	if (!sysfs_dev) {
		errno = EINVAL;
		return -1;
	}
	va_start(ap, fnfmt);
	ret = vasprintf(&file, fnfmt, ap);
	va_end(ap);
	if (ret < 0)
		return -1;
	ret = ibvrs_read_ibdev_sysfs_file(buf, size, sysfs_dev, file);
	free(file);
	return ret;
}

/* Both private-ABI generations (src/generation.rs): the same definitions
 * under IBVERBS_PRIVATE_34 and, as the default, IBVERBS_PRIVATE_65. */
__asm__(".globl __ibvrs_p34___verbs_log\n"
	".set __ibvrs_p34___verbs_log, __verbs_log\n"
	".symver __ibvrs_p34___verbs_log, __verbs_log@IBVERBS_PRIVATE_34\n"
	".globl __ibvrs_p65___verbs_log\n"
	".set __ibvrs_p65___verbs_log, __verbs_log\n"
	".symver __ibvrs_p65___verbs_log, __verbs_log@@IBVERBS_PRIVATE_65\n"
	".globl __ibvrs_p34_ibv_read_ibdev_sysfs_file\n"
	".set __ibvrs_p34_ibv_read_ibdev_sysfs_file, ibv_read_ibdev_sysfs_file\n"
	".symver __ibvrs_p34_ibv_read_ibdev_sysfs_file, ibv_read_ibdev_sysfs_file@IBVERBS_PRIVATE_34\n"
	".globl __ibvrs_p65_ibv_read_ibdev_sysfs_file\n"
	".set __ibvrs_p65_ibv_read_ibdev_sysfs_file, ibv_read_ibdev_sysfs_file\n"
	".symver __ibvrs_p65_ibv_read_ibdev_sysfs_file, ibv_read_ibdev_sysfs_file@@IBVERBS_PRIVATE_65\n");
