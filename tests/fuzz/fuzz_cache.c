/* libFuzzer target: the binary cache reader (lib/core/cache.c). The input becomes a
 * cache entry file, stored where the entry of a fixed key lives, and is loaded.
 * Checks: a hit only for an entry whose every field is right (then the payload
 * comes back exactly), never a crash or a leak, and a bad entry is removed.
 * Inputs starting with '!' are wrapped into a well-formed entry first (payload:
 * the rest), so the fuzzer also reaches the paths after validation. */
#include "core/core.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define HEADER (8 + 4 + 32 + 8 + 32)

static void check(int ok, const char *what)
{
    if (!ok) {
        fprintf(stderr, "fuzz_cache: %s\n", what);
        abort();
    }
}

static char dir[64];
static unsigned char key[32];

static void cleanup(void)
{
    char *p = clf__cache_path(dir, key);
    if (p)
        unlink(p);
    free(p);
    rmdir(dir);
}

static void setup(void)
{
    if (dir[0])
        return;
    /* tmpfs where there is one: the writer's fsync() would otherwise set the pace. */
    snprintf(dir, sizeof dir, "%s/clfleet-fuzz-cache-XXXXXX",
             access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp");
    check(mkdtemp(dir) != NULL, "a temporary directory");
    clf__cache_key_parts parts = {"source", "", "device", "driver", "platform", NULL};
    clf__cache_key(key, &parts);
    atexit(cleanup);
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);
int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    setup();
    char *path = clf__cache_path(dir, key);
    check(path != NULL, "a path");
    const unsigned char *payload = NULL;
    size_t plen = 0;
    if (size >= 1 && data[0] == '!') {
        /* Well formed: the reader must return exactly the payload. */
        payload = data + 1;
        plen = size - 1;
        check(clf__cache_store(dir, key, payload, plen) == CLF_SUCCESS, "store");
    } else {
        FILE *f = fopen(path, "wb");
        check(f != NULL, "open the entry for writing");
        check(fwrite(data, 1, size, f) == size, "write the entry");
        check(fclose(f) == 0, "close the entry");
    }
    unsigned char *bin = NULL;
    size_t len = 0;
    int hit = clf__cache_load(dir, key, &bin, &len);
    if (payload) {
        check(hit == 1, "a well-formed entry hits");
        check(len == plen && (plen == 0 || memcmp(bin, payload, plen) == 0),
              "the payload comes back exactly");
    } else if (hit) {
        /* Only a byte-exact entry: header fields, length and digest all agree. */
        check(size >= HEADER && len == size - HEADER, "a hit has the file's payload length");
        check(memcmp(data, "CLFLEETB", 8) == 0 && memcmp(data + 12, key, 32) == 0,
              "a hit has the magic and the key");
        check(len == 0 || memcmp(bin, data + HEADER, len) == 0, "a hit returns the payload");
    } else {
        check(bin == NULL && len == 0, "a miss returns nothing");
        check(access(path, F_OK) != 0, "a bad entry is removed");
    }
    free(bin);
    unlink(path);
    free(path);
    return 0;
}
