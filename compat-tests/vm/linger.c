/*
 * linger.so: LD_PRELOAD into both sides of a pingpong under packet loss.
 * Its ibv_destroy_qp waits WIRE_LINGER_MS (default 1000) before it destroys
 * the QP, as TCP's TIME_WAIT keeps a closed connection able to answer.
 *
 * Why: ibv_rc_pingpong ends as soon as its own last SEND is acknowledged and
 * its last receive has arrived, and destroys its QP at once.  If the last ACK
 * it sent was the packet lost (the server's ACK of the client's last SEND,
 * or the client's ACK of the server's last SEND), the other side retransmits
 * to a QP that no longer exists and ends with "transport retry counter
 * exceeded" - with any RC device, the kernel's rxe included (rxe-rxe and
 * rxe-ours saw it under 1 % loss with the server unlingered, ours-rxe with
 * the client unlingered).  That race is the program's, not the transport's;
 * lingering both sides lets a retransmission get its ACK, so what the loss
 * runs measure is the transport.
 *
 * The definition carries no symbol version, so it matches the program's
 * versioned reference; the real one is the next in the lookup order
 * (Debian's libibverbs or ours).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>
#include <time.h>

struct ibv_qp;

int ibv_destroy_qp(struct ibv_qp *qp)
{
	static int (*next)(struct ibv_qp *);
	const char *v = getenv("WIRE_LINGER_MS");
	long ms = v ? strtol(v, NULL, 10) : 1000;
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	if (!next)
		next = (int (*)(struct ibv_qp *))dlsym(RTLD_NEXT, "ibv_destroy_qp");
	if (!next)
		return ENOSYS;
	while (ms > 0 && nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
	return next(qp);
}
