/* compat-tests/soft-rdmacm-bad: a listener whose process accepts nothing.
 *
 *   cmlisten PORT BACKLOG [ADDR]
 *
 * Binds ADDR (default 127.0.0.1):PORT (RDMA_PS_TCP), listens with BACKLOG, prints
 * "listening" and then never asks for an event until SIGUSR1 (or SIGTERM)
 * comes; then it takes, without blocking, what its channel holds, prints
 * "N connect requests, M other events", destroys every id (as the kernel
 * would on close) and exits 0. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <rdma/rdma_cma.h>

static volatile sig_atomic_t go;
static void on_sig(int s) { (void)s; go = 1; }

int main(int argc, char **argv)
{
    struct rdma_event_channel *ch;
    struct rdma_cm_id *id, *kids[1024];
    struct rdma_cm_event *e;
    struct sockaddr_in a;
    int nk = 0, nreq = 0, nother = 0, i;

    if (argc != 3 && argc != 4) {
        fprintf(stderr, "usage: cmlisten PORT BACKLOG [ADDR]\n");
        return 2;
    }
    signal(SIGUSR1, on_sig);
    signal(SIGTERM, on_sig);
    ch = rdma_create_event_channel();
    if (!ch) { perror("rdma_create_event_channel"); return 1; }
    if (rdma_create_id(ch, &id, NULL, RDMA_PS_TCP)) { perror("rdma_create_id"); return 1; }
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_port = htons(atoi(argv[1]));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (argc == 4 && inet_pton(AF_INET, argv[3], &a.sin_addr) != 1) {
        fprintf(stderr, "cmlisten: not an IPv4 address: %s\n", argv[3]);
        return 2;
    }
    if (rdma_bind_addr(id, (struct sockaddr *)&a)) { perror("rdma_bind_addr"); return 1; }
    if (rdma_listen(id, atoi(argv[2]))) { perror("rdma_listen"); return 1; }
    printf("listening\n");
    fflush(stdout);
    while (!go)
        pause();
    fcntl(ch->fd, F_SETFL, fcntl(ch->fd, F_GETFL) | O_NONBLOCK);
    while (!rdma_get_cm_event(ch, &e)) {
        if (e->event == RDMA_CM_EVENT_CONNECT_REQUEST) {
            nreq++;
            if (nk < 1024)
                kids[nk++] = e->id;
        } else {
            nother++;
        }
        rdma_ack_cm_event(e);
    }
    if (errno != EAGAIN)
        perror("rdma_get_cm_event");
    printf("%d connect requests, %d other events\n", nreq, nother);
    for (i = 0; i < nk; i++)
        rdma_destroy_id(kids[i]);
    rdma_destroy_id(id);
    rdma_destroy_event_channel(ch);
    return 0;
}
