/* The benchmarks of clfleet-bench that live in their own files. */
#ifndef CLFLEET_TOOLS_BENCH_H
#define CLFLEET_TOOLS_BENCH_H

/*
 * `clfleet-bench p2p`: device-to-device copies of every ordered device pair at sizes from
 * 4 KiB to 256 MiB, by the chosen path, by forced staging, by the pinned-slot pipeline and
 * by the naive baseline (blocking read, then blocking write), against plain memcpy()
 * measured in the same run. argv[0] is the command's name; options follow (--help lists
 * them). Returns the process exit status (77: no devices).
 */
int clf_bench_p2p(int argc, char **argv);

#endif
