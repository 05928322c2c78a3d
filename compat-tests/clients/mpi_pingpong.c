/* compat-tests/clients/mpi_pingpong.c: a two-rank MPI ping-pong (8 B,
 * 64 KiB, 1 MiB), every message's contents checked by its receiver; rank 0
 * prints the half round-trip time and bandwidth per size, then "finalized"
 * after a clean MPI_Finalize. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
int main(int argc, char **argv)
{
	int rank, size, n = 1000;
	static char buf[1 << 20];
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	if (size != 2) { if (!rank) fprintf(stderr, "need 2 ranks\n"); MPI_Abort(MPI_COMM_WORLD, 2); }
	int sizes[] = { 8, 65536, 1 << 20 };
	for (int k = 0; k < 3; k++) {
		int len = sizes[k];
		int iters = len > 65536 ? 100 : n;
		MPI_Barrier(MPI_COMM_WORLD);
		double t0 = MPI_Wtime();
		for (int i = 0; i < iters; i++) {
			if (rank == 0) {
				memset(buf, (char)i, len);
				MPI_Send(buf, len, MPI_CHAR, 1, i, MPI_COMM_WORLD);
				MPI_Recv(buf, len, MPI_CHAR, 1, i, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
				for (int j = 0; j < len; j++)
					if (buf[j] != (char)(i + 1)) { fprintf(stderr, "data mismatch at %d/%d\n", i, j); MPI_Abort(MPI_COMM_WORLD, 3); }
			} else {
				MPI_Recv(buf, len, MPI_CHAR, 0, i, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
				for (int j = 0; j < len; j++)
					if (buf[j] != (char)i) { fprintf(stderr, "data mismatch at %d/%d\n", i, j); MPI_Abort(MPI_COMM_WORLD, 3); }
				memset(buf, (char)(i + 1), len);
				MPI_Send(buf, len, MPI_CHAR, 0, i, MPI_COMM_WORLD);
			}
		}
		double dt = MPI_Wtime() - t0;
		if (rank == 0)
			printf("pingpong %d bytes x %d: %.2f us half round trip, %.1f MB/s\n", len, iters,
			       dt / iters / 2 * 1e6, 2.0 * len * iters / dt / 1e6);
	}
	MPI_Finalize();
	if (rank == 0)
		printf("finalized\n");
	return 0;
}
