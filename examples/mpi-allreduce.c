/* clfleet across MPI ranks: every rank takes its share of its node's devices, puts one
 * buffer on each, and clf_comm_allreduce() sums every buffer of every rank into all of them.
 * Build: cc -std=c11 mpi-allreduce.c $(pkg-config --cflags --libs clfleet-mpi) (with Open
 * MPI's pkg-config, or mpicc ... -lclfleet-mpi -lclfleet). Run: mpirun -np 2 ./mpi-allreduce
 * The result is checked against the sum computed here. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#include <clfleet/mpi.h>

int main(int argc, char **argv)
{
    int provided, rank, size;
    /* clfleet runs threads of its own: ask for MPI_THREAD_MULTIPLE (FUNNELED is enough). */
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    /* This rank's devices: its share of the node's ($CLFLEET_DEVICES, else the default). */
    clf_fleet *fleet = NULL;
    clf_status st = clf_comm_node_fleet(&fleet, MPI_COMM_WORLD, NULL);
    clf_comm *comm = NULL;
    if (st == CLF_SUCCESS)
        st = clf_comm_create(&comm, MPI_COMM_WORLD, fleet, NULL);
    if (st != CLF_SUCCESS) { /* the same status on every rank */
        fprintf(stderr, "rank %d: %s: %s\n", rank, clf_status_name(st), clf_last_error());
        clf_fleet_destroy(fleet);
        MPI_Finalize();
        return 1;
    }

    /* One buffer per device, element i = rank + device + i % 7. */
    enum { N = 1 << 20, MAXDEV = 16 };
    size_t ndev = clf_fleet_device_count(fleet);
    if (ndev > MAXDEV)
        ndev = MAXDEV;
    clf_buffer *bufs[MAXDEV] = {NULL};
    float *host = malloc(N * sizeof *host);
    if (!host)
        st = CLF_ERROR_OUT_OF_HOST_MEMORY;
    for (size_t d = 0; d < ndev && st == CLF_SUCCESS; d++) {
        for (size_t i = 0; i < N; i++)
            host[i] = (float)(rank + (int)d + (int)(i % 7));
        st = clf_buffer_create(&bufs[d], fleet, d, N * sizeof(float), CLF_MEM_READ_WRITE);
        if (st == CLF_SUCCESS)
            st = clf_buffer_write(bufs[d], 0, N * sizeof(float), host);
    }
    /* Every buffer of every rank summed into all of them. */
    if (st == CLF_SUCCESS)
        st = clf_comm_allreduce(comm, bufs, ndev, N, CLF_TYPE_FLOAT, CLF_REDUCE_SUM);

    /* Check: the sum over ranks and their devices (device counts may differ per rank). */
    long long mydevs = (long long)ndev, devs = 0, mysum = 0, sum = 0;
    for (size_t d = 0; d < ndev; d++)
        mysum += rank + (long long)d;
    MPI_Allreduce(&mydevs, &devs, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
    MPI_Allreduce(&mysum, &sum, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
    int ok = st == CLF_SUCCESS;
    for (size_t d = 0; ok && d < ndev; d++) {
        ok = clf_buffer_read(bufs[d], 0, N * sizeof(float), host) == CLF_SUCCESS;
        for (size_t i = 0; ok && i < N; i++)
            ok = host[i] == (float)(sum + devs * (long long)(i % 7));
    }
    if (st != CLF_SUCCESS)
        fprintf(stderr, "rank %d: %s: %s\n", rank, clf_status_name(st), clf_last_error());
    int all = 0;
    MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (rank == 0)
        printf("%d ranks, %lld devices: all-reduce of %d floats %s\n", size, devs, N,
               all ? "correct" : "WRONG");
    for (size_t d = 0; d < ndev; d++)
        clf_buffer_destroy(bufs[d]);
    free(host);
    clf_comm_destroy(comm);
    clf_fleet_destroy(fleet);
    MPI_Finalize();
    return all ? 0 : 1;
}
