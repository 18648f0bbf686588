/*
 * Example: a two-layer perceptron's forward pass as a graph of kernels (clfleet/graph.h).
 *
 * The batch is cut into tiles of rows; each tile goes through two nodes,
 *     H_t = relu(X_t W1 + b1)      (layer 1)
 *     Y_t = H_t W2 + b2            (layer 2)
 * and the weights are shared by every tile. The graph is recorded once: the dependencies
 * (layer 2 of a tile after its layer 1) follow from the buffers' access modes, and each node
 * goes to the device where the cost model predicts it finishes first, the weights copied to a
 * device only when a node there needs them and it holds no copy. The graph runs three times,
 * keeping the copies between runs (CLF_GRAPH_KEEP_COPIES: the weights move once), the plan
 * reused and the measured kernel times teaching the model; the program prints
 * where each node went and why, the copies and their bytes per path, and checks Y against a
 * plain C forward pass.
 *
 * The exit status: 0 when Y matches, 1 when it does not or a call fails, 77 without a device.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <clfleet.h>
#include <clfleet/graph.h>

enum { TILES = 6, ROWS = 64, IN = 128, HID = 96, OUT = 32, RUNS = 3 };

static const char SRC[] =
    "kernel void dense(global const float *x, global const float *w, global const float *b,\n"
    "                  global float *y, uint k, uint n, uint relu)\n"
    "{\n"
    "    size_t j = get_global_id(0), r = get_global_id(1);\n"
    "    float s = b[j];\n"
    "    for (uint i = 0; i < k; i++) s += x[r * k + i] * w[i * n + j];\n"
    "    y[r * n + j] = relu && s < 0.0f ? 0.0f : s;\n"
    "}\n";

static int fail(const char *what, clf_status st)
{
    fprintf(stderr, "graph: %s: %s\n%s\n", what, clf_status_string(st), clf_last_error());
    int none = st == CLF_ERROR_NO_DEVICE || st == CLF_ERROR_NO_PLATFORM;
    const char *req = getenv("CLFLEET_REQUIRE_DEVICES");
    return none && (!req || !*req || !strcmp(req, "0")) ? 77 : 1;
}

static void dense_ref(const float *x, const float *w, const float *b, float *y, size_t rows,
                      size_t k, size_t n, int relu)
{
    for (size_t r = 0; r < rows; r++)
        for (size_t j = 0; j < n; j++) {
            float s = b[j];
            for (size_t i = 0; i < k; i++)
                s += x[r * k + i] * w[i * n + j];
            y[r * n + j] = relu && s < 0.0f ? 0.0f : s;
        }
}

/* A buffer to make: where it goes, its bytes, its first contents (or NULL). */
struct buf_plan {
    clf_buffer **b;
    size_t dev, bytes;
    const float *init;
};

static float *filled(size_t n, unsigned seed)
{
    float *v = malloc(n * sizeof *v);
    for (size_t i = 0; v && i < n; i++) {
        seed = seed * 1103515245u + 12345u;
        v[i] = (float)((seed >> 16) % 2001) / 1000.0f - 1.0f;
    }
    return v;
}

int main(void)
{
    clf_fleet *f = NULL;
    clf_program *p = NULL;
    clf_graph *g = NULL;
    clf_buffer *w1 = NULL, *b1 = NULL, *w2 = NULL, *b2 = NULL;
    clf_buffer *x[TILES] = {NULL}, *h[TILES] = {NULL}, *y[TILES] = {NULL};
    float *hx = filled((size_t)TILES * ROWS * IN, 1), *hw1 = filled(IN * HID, 2),
          *hb1 = filled(HID, 3), *hw2 = filled(HID * OUT, 4), *hb2 = filled(OUT, 5);
    float *ref_h = malloc(sizeof(float) * ROWS * HID), *ref_y = malloc(sizeof(float) * ROWS * OUT),
          *got = malloc(sizeof(float) * ROWS * OUT);
    int rc = 1;
    clf_status st;
    if (!hx || !hw1 || !hb1 || !hw2 || !hb2 || !ref_h || !ref_y || !got) {
        fprintf(stderr, "graph: out of memory\n");
        goto out;
    }
    clf_fleet_options o = CLF_FLEET_OPTIONS_INIT;
    if ((st = clf_fleet_create(&f, &o)) != CLF_SUCCESS) {
        rc = fail("fleet", st);
        goto out;
    }
    size_t ndev = clf_fleet_device_count(f);
    if ((st = clf_program_build_source(&p, f, SRC, NULL)) != CLF_SUCCESS) {
        rc = fail("build", st);
        goto out;
    }
    /* The weights live on device 0, the tiles' buffers are dealt over the devices: where
     * the nodes run is the scheduler's business. */
    struct buf_plan bufs[4 + 3 * TILES] = {
        {&w1, 0, sizeof(float) * IN * HID, hw1},
        {&b1, 0, sizeof(float) * HID, hb1},
        {&w2, 0, sizeof(float) * HID * OUT, hw2},
        {&b2, 0, sizeof(float) * OUT, hb2},
    };
    for (size_t t = 0; t < TILES; t++) {
        size_t d = t % ndev;
        bufs[4 + 3 * t] = (struct buf_plan){&x[t], d, sizeof(float) * ROWS * IN,
                                            hx + t * ROWS * IN};
        bufs[5 + 3 * t] = (struct buf_plan){&h[t], d, sizeof(float) * ROWS * HID, NULL};
        bufs[6 + 3 * t] = (struct buf_plan){&y[t], d, sizeof(float) * ROWS * OUT, NULL};
    }
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) {
        st = clf_buffer_create(bufs[i].b, f, bufs[i].dev, bufs[i].bytes, 0);
        if (st == CLF_SUCCESS && bufs[i].init)
            st = clf_buffer_write(*bufs[i].b, 0, bufs[i].bytes, bufs[i].init);
        if (st != CLF_SUCCESS) {
            rc = fail("buffer", st);
            goto out;
        }
    }

    if ((st = clf_graph_create(&g, f, p)) != CLF_SUCCESS) {
        rc = fail("graph", st);
        goto out;
    }
    /* The weights do not change between runs: the copies a run leaves on the devices stay
     * for the next (new inputs would be announced with clf_graph_buffer_changed()). */
    if ((st = clf_graph_set_flags(g, CLF_GRAPH_KEEP_COPIES)) != CLF_SUCCESS) {
        rc = fail("flags", st);
        goto out;
    }
    unsigned k1 = IN, n1 = HID, k2 = HID, n2 = OUT, relu = 1, linear = 0;
    for (size_t t = 0; t < TILES; t++) {
        clf_graph_node_desc d = CLF_GRAPH_NODE_DESC_INIT;
        d.kernel = "dense";
        d.dims = 2;
        d.global[0] = HID;
        d.global[1] = ROWS;
        clf_arg l1[] = {CLF_BUF_IN(x[t]), CLF_BUF_IN(w1), CLF_BUF_IN(b1), CLF_BUF_OUT(h[t]),
                        CLF_SCALAR(&k1), CLF_SCALAR(&n1), CLF_SCALAR(&relu)};
        if ((st = clf_graph_add_kernel(NULL, g, &d, l1, 7)) != CLF_SUCCESS) {
            rc = fail("layer 1", st);
            goto out;
        }
        d.global[0] = OUT;
        clf_arg l2[] = {CLF_BUF_IN(h[t]), CLF_BUF_IN(w2), CLF_BUF_IN(b2), CLF_BUF_OUT(y[t]),
                        CLF_SCALAR(&k2), CLF_SCALAR(&n2), CLF_SCALAR(&linear)};
        if ((st = clf_graph_add_kernel(NULL, g, &d, l2, 7)) != CLF_SUCCESS) {
            rc = fail("layer 2", st);
            goto out;
        }
    }

    clf_graph_report r;
    for (int run = 0; run < RUNS; run++) {
        clf_event *done = NULL;
        if ((st = clf_graph_run(g, &done)) != CLF_SUCCESS) {
            rc = fail("run", st);
            goto out;
        }
        /* The run is in flight: the host is free here (the next batch could be prepared). */
        st = clf_event_wait(done);
        clf_event_release(done);
        if (st != CLF_SUCCESS || (st = clf_graph_report_get(&r, g)) != CLF_SUCCESS) {
            rc = fail("run", st);
            goto out;
        }
        printf("run %d: %zu nodes on %zu device(s), %zu copies (%llu bytes), predicted %.3f ms "
               "(critical path %.3f ms), measured %.3f ms%s\n",
               run + 1, r.nodes, ndev, r.copies, (unsigned long long)r.copy_bytes,
               r.predicted_makespan_s * 1e3, r.critical_path_s * 1e3, r.makespan_s * 1e3,
               r.plan_reused ? " (plan reused)" : "");
    }
    for (size_t n = 0; n < 2 * TILES; n++) {
        clf_graph_node_report nr;
        if (clf_graph_node_info(&nr, g, n) == CLF_SUCCESS)
            printf("  node %2zu (tile %zu, layer %zu): device %zu, kernel %.3f ms; %s\n", n,
                   n / 2, n % 2 + 1, nr.device, nr.kernel_s * 1e3, nr.why);
    }
    printf("splits: %zu nodes whole on one device, %zu split over array parts\n",
           r.whole_nodes, r.split_nodes);
    for (int path = 0; path < 5; path++)
        if (r.path_copies[path])
            printf("copies by %s: %zu, %llu bytes\n", clf_path_name((clf_path)path),
                   r.path_copies[path], (unsigned long long)r.path_bytes[path]);
    for (size_t d = 0; d < ndev && d < CLF_MAX_LAUNCH_DEVICES; d++)
        printf("device %zu: %zu nodes, busy %.3f ms\n", d, r.device_nodes[d],
               r.device_busy_s[d] * 1e3);

    /* Each tile against the C forward pass (a few ulps apart: devices may contract a
     * multiply and an add into one FMA). */
    size_t wrong = 0;
    for (size_t t = 0; t < TILES; t++) {
        dense_ref(hx + t * ROWS * IN, hw1, hb1, ref_h, ROWS, IN, HID, 1);
        dense_ref(ref_h, hw2, hb2, ref_y, ROWS, HID, OUT, 0);
        if ((st = clf_buffer_read(y[t], 0, sizeof(float) * ROWS * OUT, got)) != CLF_SUCCESS) {
            rc = fail("read", st);
            goto out;
        }
        for (size_t i = 0; i < (size_t)ROWS * OUT; i++)
            if (fabsf(got[i] - ref_y[i]) > 1e-3f * (1.0f + fabsf(ref_y[i])) && wrong++ == 0)
                fprintf(stderr, "graph: tile %zu: y[%zu] = %g, want %g\n", t, i, got[i],
                        ref_y[i]);
    }
    printf("%s\n", wrong ? "FAIL" : "PASS");
    rc = wrong ? 1 : 0;
out:
    clf_graph_destroy(g);
    for (size_t t = 0; t < TILES; t++) {
        clf_buffer_destroy(x[t]);
        clf_buffer_destroy(h[t]);
        clf_buffer_destroy(y[t]);
    }
    clf_buffer_destroy(w1);
    clf_buffer_destroy(b1);
    clf_buffer_destroy(w2);
    clf_buffer_destroy(b2);
    clf_program_destroy(p);
    clf_fleet_destroy(f);
    free(hx);
    free(hw1);
    free(hb1);
    free(hw2);
    free(hb2);
    free(ref_h);
    free(ref_y);
    free(got);
    return rc;
}
