/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/*
 * arch.h - part of the ibverbs_rs libibverbs replacement.
 *
 * Legacy header kept only so old code still builds.  It offers the
 * deprecated htonll()/ntohll() helpers; new code should call htobe64() and
 * be64toh() from <endian.h>.  Memory barrier macros are not provided.
 */
#ifndef INFINIBAND_ARCH_H
#define INFINIBAND_ARCH_H

#include <stdint.h>
#include <endian.h>

#warning "This header is obsolete."

/* Only define the helpers if nobody else has provided an ntohll already. */
#ifndef ntohll
#undef htonll
#undef ntohll
/* Host <-> big-endian 64-bit conversion (byte swap on little-endian hosts). */
static inline __attribute__((deprecated)) uint64_t htonll(uint64_t x)
{
#if __BYTE_ORDER == __LITTLE_ENDIAN
	x = (x << 32) | (x >> 32);
	x = ((x & 0x0000ffff0000ffffULL) << 16) | ((x >> 16) & 0x0000ffff0000ffffULL);
	x = ((x & 0x00ff00ff00ff00ffULL) << 8) | ((x >> 8) & 0x00ff00ff00ff00ffULL);
#endif
	return x;
}
static inline __attribute__((deprecated)) uint64_t ntohll(uint64_t x)
{
#if __BYTE_ORDER == __LITTLE_ENDIAN
	x = (x << 32) | (x >> 32);
	x = ((x & 0x0000ffff0000ffffULL) << 16) | ((x >> 16) & 0x0000ffff0000ffffULL);
	x = ((x & 0x00ff00ff00ff00ffULL) << 8) | ((x >> 8) & 0x00ff00ff00ff00ffULL);
#endif
	return x;
}
#define htonll htonll
#define ntohll ntohll
#endif

#endif /* INFINIBAND_ARCH_H */
