/* Buffer round trips on every device, and every bad-input case. */
#include "common.h"

#include <stdint.h>

static unsigned char *pattern(size_t n, unsigned seed)
{
    unsigned char *p = malloc(n);
    ck_assert_ptr_nonnull(p);
    uint32_t x = seed * 2654435761u + 1;
    for (size_t i = 0; i < n; i++) {
        x ^= x << 13, x ^= x >> 17, x ^= x << 5;
        p[i] = (unsigned char)x;
    }
    return p;
}

START_TEST(round_trip_every_device)
{
    clf_fleet *f = test_fleet(TEST_CPUS ";name=pthread;split=1", _i);
    size_t n = clf_fleet_device_count(f);
    const size_t size = (1u << 20) + 13; /* odd on purpose */
    for (size_t d = 0; d < n; d++) {
        unsigned char *src = pattern(size, (unsigned)d + 1), *dst = calloc(1, size);
        clf_buffer *b;
        ck_assert_ok(clf_buffer_create(&b, f, d, size, 0));
        ck_assert_uint_eq(clf_buffer_size(b), size);
        ck_assert_uint_eq(clf_buffer_device(b), d);
        ck_assert_ok(clf_buffer_write(b, 0, size, src));
        ck_assert_ok(clf_buffer_read(b, 0, size, dst));
        ck_assert_int_eq(memcmp(src, dst, size), 0);

        /* Sub-ranges at odd offsets, asynchronously. */
        unsigned char *src2 = pattern(size, 99);
        clf_event *w, *r;
        ck_assert_ok(clf_buffer_write_async(b, 7, 1001, src2, &w));
        ck_assert_ok(clf_event_wait(w));
        clf_event_release(w);
        memset(dst, 0, size);
        ck_assert_ok(clf_buffer_read_async(b, 0, size, dst, &r));
        ck_assert_ok(clf_event_wait(r));
        clf_event_release(r);
        ck_assert_int_eq(memcmp(dst, src, 7), 0);
        ck_assert_int_eq(memcmp(dst + 7, src2, 1001), 0);
        ck_assert_int_eq(memcmp(dst + 1008, src + 1008, size - 1008), 0);
        /* An async call without an event still completes in order. */
        ck_assert_ok(clf_buffer_write_async(b, size - 1, 1, src2, NULL));
        ck_assert_ok(clf_buffer_read(b, size - 1, 1, dst));
        ck_assert_int_eq(dst[0], src2[0]);

        /* The host's model of the buffer after the writes above. */
        unsigned char *model = malloc(size);
        ck_assert_ptr_nonnull(model);
        memcpy(model, src, size);
        memcpy(model + 7, src2, 1001);
        model[size - 1] = src2[0];
        uint32_t pat = 0xdeadbeef;
        for (size_t i = 64; i < 64 + 4096; i += 4)
            memcpy(model + i, &pat, 4);
        ck_assert_ok(clf_buffer_fill(b, &pat, sizeof pat, 64, 4096));
        ck_assert_ok(clf_buffer_read(b, 0, size, dst));
        ck_assert_int_eq(memcmp(dst, model, size), 0);
        /* Mapped: the host sees the buffer's bytes and what it writes there is the
         * buffer's; a discarding map of a sub-range leaves the rest alone. */
        unsigned char *m = NULL;
        ck_assert_ok(clf_buffer_map((void **)&m, b, 5, size - 5, CLF_MAP_READ | CLF_MAP_WRITE));
        ck_assert_ptr_nonnull(m);
        ck_assert_int_eq(memcmp(m, model + 5, size - 5), 0);
        for (size_t i = 0; i < 3000; i++)
            m[i] ^= 0x5a;
        ck_assert_ok(clf_buffer_unmap(b, m));
        for (size_t i = 5; i < 3005; i++)
            model[i] ^= 0x5a;
        ck_assert_ok(clf_buffer_map((void **)&m, b, 100, 50, CLF_MAP_WRITE | CLF_MAP_DISCARD));
        memset(m, 0x77, 50);
        ck_assert_ok(clf_buffer_unmap(b, m));
        memset(model + 100, 0x77, 50);
        ck_assert_ok(clf_buffer_map((void **)&m, b, 0, size, CLF_MAP_READ));
        ck_assert_int_eq(memcmp(m, model, size), 0);
        ck_assert_ok(clf_buffer_unmap(b, m));
        ck_assert_ok(clf_buffer_read(b, 0, size, dst));
        ck_assert_int_eq(memcmp(dst, model, size), 0);
        free(model);
        clf_buffer_destroy(b);
        free(src), free(src2), free(dst);
    }
    clf_fleet_destroy(f);
}
END_TEST

START_TEST(bad_input)
{
    clf_fleet *f = test_fleet(TEST_CPUS, 0);
    size_t n = clf_fleet_device_count(f);
    clf_buffer *b = NULL;
    char host[64] = {0};
    ck_assert_status(clf_buffer_create(&b, f, n, 64, 0), CLF_ERROR_OUT_OF_RANGE);
    ck_assert_status(clf_buffer_create(&b, f, SIZE_MAX, 64, 0), CLF_ERROR_OUT_OF_RANGE);
    ck_assert_status(clf_buffer_create(&b, f, 0, 0, 0), CLF_ERROR_ZERO_SIZE);
    ck_assert_status(clf_buffer_create(&b, f, 0, SIZE_MAX, 0), CLF_ERROR_OUT_OF_RANGE);
    ck_assert_status(clf_buffer_create(&b, f, 0, 64, 0x80), CLF_ERROR_INVALID_ARGUMENT);
    ck_assert_status(clf_buffer_create(&b, f, 0, 64, CLF_MEM_READ_ONLY | CLF_MEM_WRITE_ONLY),
                     CLF_ERROR_INVALID_ARGUMENT);
    ck_assert_ptr_null(b);
    ck_assert_ok(clf_buffer_create(&b, f, 0, 64, 0));
    ck_assert_status(clf_buffer_write(b, 0, 0, host), CLF_ERROR_ZERO_SIZE);
    ck_assert_status(clf_buffer_write(b, 0, 65, host), CLF_ERROR_OUT_OF_RANGE);
    ck_assert_status(clf_buffer_write(b, 64, 1, host), CLF_ERROR_OUT_OF_RANGE);
    ck_assert_status(clf_buffer_read(b, SIZE_MAX, 2, host), CLF_ERROR_SIZE_OVERFLOW);
    ck_assert_status(clf_buffer_read(b, 1, SIZE_MAX, host), CLF_ERROR_SIZE_OVERFLOW);
    ck_assert_status(clf_buffer_read(b, 0, 8, NULL), CLF_ERROR_NULL_POINTER);
    clf_event *ev = (clf_event *)host;
    ck_assert_status(clf_buffer_read_async(b, 0, 65, host, &ev), CLF_ERROR_OUT_OF_RANGE);
    ck_assert_ptr_null(ev);
    ck_assert_status(clf_buffer_fill(b, host, 3, 0, 12), CLF_ERROR_INVALID_ARGUMENT);
    ck_assert_status(clf_buffer_fill(b, host, 256, 0, 256), CLF_ERROR_OUT_OF_RANGE);
    ck_assert_status(clf_buffer_fill(b, host, 0, 0, 8), CLF_ERROR_INVALID_ARGUMENT);
    ck_assert_status(clf_buffer_fill(b, host, 4, 2, 8), CLF_ERROR_INVALID_ARGUMENT);
    ck_assert_status(clf_buffer_fill(b, host, 4, 0, 6), CLF_ERROR_INVALID_ARGUMENT);
    ck_assert_status(clf_buffer_fill(b, NULL, 4, 0, 8), CLF_ERROR_NULL_POINTER);
    void *m = host;
    ck_assert_status(clf_buffer_map(&m, b, 0, 65, CLF_MAP_READ), CLF_ERROR_OUT_OF_RANGE);
    ck_assert_ptr_null(m);
    ck_assert_status(clf_buffer_map(&m, b, SIZE_MAX, 2, CLF_MAP_READ), CLF_ERROR_SIZE_OVERFLOW);
    ck_assert_status(clf_buffer_map(&m, b, 0, 0, CLF_MAP_READ), CLF_ERROR_ZERO_SIZE);
    ck_assert_status(clf_buffer_map(&m, NULL, 0, 8, CLF_MAP_READ), CLF_ERROR_NULL_POINTER);
    ck_assert_status(clf_buffer_map(NULL, b, 0, 8, CLF_MAP_READ), CLF_ERROR_NULL_POINTER);
    ck_assert_status(clf_buffer_map(&m, b, 0, 8, 0), CLF_ERROR_INVALID_ARGUMENT);
    ck_assert_status(clf_buffer_map(&m, b, 0, 8, 0x40 | CLF_MAP_READ),
                     CLF_ERROR_INVALID_ARGUMENT);
    ck_assert_status(clf_buffer_map(&m, b, 0, 8, CLF_MAP_READ | CLF_MAP_DISCARD),
                     CLF_ERROR_INVALID_ARGUMENT);
    ck_assert_status(clf_buffer_unmap(b, host), CLF_ERROR_INVALID_ARGUMENT); /* not mapped */
    ck_assert_status(clf_buffer_unmap(b, NULL), CLF_ERROR_NULL_POINTER);
    ck_assert_ok(clf_buffer_map(&m, b, 8, 8, CLF_MAP_READ));
    ck_assert_status(clf_buffer_unmap(b, host), CLF_ERROR_INVALID_ARGUMENT); /* not its map */
    ck_assert_ok(clf_buffer_unmap(b, m));
    ck_assert_status(clf_buffer_unmap(b, m), CLF_ERROR_INVALID_ARGUMENT); /* twice */
    /* A failed write left the buffer as it was. */
    unsigned char ones[64], back[64];
    memset(ones, 1, sizeof ones);
    ck_assert_ok(clf_buffer_write(b, 0, 64, ones));
    ck_assert_status(clf_buffer_write(b, 32, 33, host), CLF_ERROR_OUT_OF_RANGE);
    ck_assert_ok(clf_buffer_read(b, 0, 64, back));
    ck_assert_int_eq(memcmp(ones, back, 64), 0);
    clf_buffer_destroy(b);
    clf_fleet_destroy(f);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("buffer");
    TCase *tc = tcase_create("buffer");
    tcase_set_timeout(tc, 120);
    tcase_add_loop_test(tc, round_trip_every_device, 0, 2);
    tcase_add_test(tc, bad_input);
    suite_add_tcase(s, tc);
    return test_run(s, TEST_CPUS, 3);
}
