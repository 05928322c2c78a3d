/* mixed.c: one rdma_cm event channel, two connections at once, each to an
 * rdma_server (rdmacm-utils): one to ADDR_A, one to ADDR_B.  Under
 * swrdma-cm on a machine that also has kernel RDMA devices, one address is
 * the software device's (127.0.0.1: swr0) and the other a kernel device's
 * (rxe): the two ids share the channel, and each must reach its own
 * connection manager.  Each connection exchanges one message as
 * rdma_client does (receive posted, 16 bytes sent, the server's 16 bytes
 * received), then both disconnect.
 *
 *   mixed ADDR_A PORT_A ADDR_B PORT_B
 *
 * Prints one line per step and connection; exit 0 when both completed. */
#include <netdb.h>
#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct conn {
	const char *name;
	struct rdma_cm_id *id;
	struct ibv_mr *mr;
	char recv[16], send[16]; /* one MR covers both: recv first */
	int established, disconnected;
};

static struct rdma_event_channel *ch;
static struct conn conns[2];

static struct conn *of(struct rdma_cm_id *id)
{
	for (int i = 0; i < 2; i++)
		if (conns[i].id == id)
			return &conns[i];
	return NULL;
}

/* Waits for the next event; handles it; returns its connection. */
static int step(void)
{
	struct rdma_cm_event *e;
	if (rdma_get_cm_event(ch, &e)) {
		perror("rdma_get_cm_event");
		return -1;
	}
	struct conn *c = of(e->id);
	enum rdma_cm_event_type t = e->event;
	int status = e->status;
	rdma_ack_cm_event(e);
	if (!c) {
		fprintf(stderr, "event %s for an unknown id\n", rdma_event_str(t));
		return -1;
	}
	printf("%s: %s (status %d)\n", c->name, rdma_event_str(t), status);
	switch (t) {
	case RDMA_CM_EVENT_ADDR_RESOLVED:
		printf("%s: on device %s\n", c->name, c->id->verbs ? ibv_get_device_name(c->id->verbs->device) : "(none)");
		return rdma_resolve_route(c->id, 2000);
	case RDMA_CM_EVENT_ROUTE_RESOLVED: {
		struct ibv_qp_init_attr a = {
			.cap = {.max_send_wr = 1, .max_recv_wr = 1, .max_send_sge = 1, .max_recv_sge = 1},
			.qp_type = IBV_QPT_RC,
			.sq_sig_all = 1,
		};
		if (rdma_create_qp(c->id, NULL, &a)) {
			perror("rdma_create_qp");
			return -1;
		}
		c->mr = rdma_reg_msgs(c->id, c->recv, sizeof(c->recv) + sizeof(c->send));
		if (!c->mr || rdma_post_recv(c->id, NULL, c->recv, sizeof(c->recv), c->mr)) {
			perror("rdma_post_recv");
			return -1;
		}
		struct rdma_conn_param p = {.responder_resources = 1, .initiator_depth = 1, .retry_count = 7, .rnr_retry_count = 7};
		return rdma_connect(c->id, &p);
	}
	case RDMA_CM_EVENT_ESTABLISHED:
		c->established = 1;
		return 0;
	case RDMA_CM_EVENT_DISCONNECTED:
		c->disconnected = 1;
		return 0;
	default:
		return -1;
	}
}

static int exchange(struct conn *c)
{
	struct ibv_wc wc;
	memset(c->send, 'a' + (int)(c - conns), sizeof(c->send));
	/* the send buffer lies right after the receive buffer, in the same MR */
	if (rdma_post_send(c->id, NULL, c->send, sizeof(c->send), c->mr, 0)) {
		perror("rdma_post_send");
		return -1;
	}
	if (rdma_get_send_comp(c->id, &wc) <= 0 || wc.status) {
		fprintf(stderr, "%s: send completion %s\n", c->name, ibv_wc_status_str(wc.status));
		return -1;
	}
	if (rdma_get_recv_comp(c->id, &wc) <= 0 || wc.status) {
		fprintf(stderr, "%s: receive completion %s\n", c->name, ibv_wc_status_str(wc.status));
		return -1;
	}
	printf("%s: message exchanged (%u bytes back)\n", c->name, wc.byte_len);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc != 5) {
		fprintf(stderr, "usage: mixed ADDR_A PORT_A ADDR_B PORT_B\n");
		return 2;
	}
	ch = rdma_create_event_channel();
	if (!ch) {
		perror("rdma_create_event_channel");
		return 1;
	}
	for (int i = 0; i < 2; i++) {
		struct conn *c = &conns[i];
		struct addrinfo *ai, hints = {.ai_family = AF_INET, .ai_socktype = SOCK_STREAM};
		c->name = argv[1 + 2 * i];
		if (getaddrinfo(argv[1 + 2 * i], argv[2 + 2 * i], &hints, &ai)) {
			fprintf(stderr, "getaddrinfo %s failed\n", c->name);
			return 1;
		}
		if (rdma_create_id(ch, &c->id, c, RDMA_PS_TCP) || rdma_resolve_addr(c->id, NULL, ai->ai_addr, 2000)) {
			perror(c->name);
			return 1;
		}
		freeaddrinfo(ai);
	}
	while (!conns[0].established || !conns[1].established)
		if (step())
			return 1;
	for (int i = 0; i < 2; i++)
		if (exchange(&conns[i]))
			return 1;
	for (int i = 0; i < 2; i++)
		rdma_disconnect(conns[i].id);
	while (!conns[0].disconnected || !conns[1].disconnected)
		if (step())
			return 1;
	for (int i = 0; i < 2; i++) {
		rdma_dereg_mr(conns[i].mr);
		rdma_destroy_qp(conns[i].id);
		rdma_destroy_id(conns[i].id);
	}
	rdma_destroy_event_channel(ch);
	printf("both connections done\n");
	return 0;
}
