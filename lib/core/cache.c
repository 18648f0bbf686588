/* On-disk cache of program binaries, one file per (source, options, device,
 * driver, platform, included files) key.
 *
 * Entry layout, all integers little-endian:
 *   "CLFLEETB"  8 bytes   magic
 *   version     4 bytes   CACHE_VERSION
 *   key        32 bytes   the key the entry was stored under
 *   length      8 bytes   payload bytes that follow the header
 *   digest     32 bytes   SHA-256 of the payload
 *   payload
 * An entry is trusted only when every field checks out, so a torn, corrupted,
 * foreign or misplaced file is a miss (and is removed so it gets rebuilt),
 * never a bad binary handed to the driver. Entries are written to a temporary
 * file and renamed into place, so readers see either nothing or a whole file.
 * A writer killed between the two leaves its temporary file: each store removes those
 * older than an hour (TMP_MAX_AGE_S). A directory in an entry's place (which rename()
 * cannot replace) is removed when empty, else reported once per process and left alone.
 * With $CLFLEET_CACHE_MAX set, each store then removes the least recently used entries
 * (a load renews an entry's modification time) until the rest fit (clf__cache_trim()).
 *
 * The SHA-256 (FIPS 180-4) that keys and checks the entries (and names a program in the
 * performance model) is at the end of this file. A local copy keeps the library free of a
 * crypto dependency; speed is not critical because only sources, options and binaries of
 * kernels are hashed. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* mkostemp; O_CLOEXEC under -std=c11 */
#endif
#include "core.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define CACHE_VERSION 1u
/* A temporary entry older than this was left by a writer that died before its rename: a
 * live one writes and syncs at most 1 GiB, in seconds, not in an hour. */
#define TMP_MAX_AGE_S 3600
#define CACHE_HEADER (8 + 4 + 32 + 8 + 32)
#define CACHE_MAX_PAYLOAD ((uint64_t)1 << 30)
/* Keep each read()/write() far below SSIZE_MAX, whose result is otherwise unspecified. */
#define IO_CHUNK ((size_t)1 << 28)

static void put_le(unsigned char *p, uint64_t v, unsigned bytes)
{
    for (unsigned i = 0; i < bytes; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static uint64_t get_le(const unsigned char *p, unsigned bytes)
{
    uint64_t v = 0;
    for (unsigned i = 0; i < bytes; i++)
        v |= (uint64_t)p[i] << (8 * i);
    return v;
}

void clf__cache_key(unsigned char key[32], const clf__cache_key_parts *p)
{
    const char *parts[6] = {NULL, NULL, NULL, NULL, NULL, NULL};
    if (p) {
        parts[0] = p->source;
        parts[1] = p->options;
        parts[2] = p->device;
        parts[3] = p->driver;
        parts[4] = p->platform;
        parts[5] = p->includes;
    }
    clf__sha256 c;
    clf__sha256_init(&c);
    for (size_t i = 0; i < CLF__ARRAY_LEN(parts); i++) {
        /* A source without includes keeps the key it had before they were keyed. */
        if (i == 5 && !parts[i])
            break;
        /* The length prefix makes the encoding unambiguous: ("ab","c") and
         * ("a","bc") differ, and a NULL part (UINT64_MAX) differs from "". */
        size_t n = parts[i] ? strlen(parts[i]) : 0;
        unsigned char len[8];
        put_le(len, parts[i] ? (uint64_t)n : UINT64_MAX, 8);
        clf__sha256_update(&c, len, sizeof len);
        if (n)
            clf__sha256_update(&c, parts[i], n);
    }
    clf__sha256_final(&c, key);
}

/* malloc'd a + b, or NULL on overflow or out of memory. */
char *clf__cache_path(const char *dir, const unsigned char key[32])
{
    if (!dir || !key)
        return NULL;
    char name[1 + 64 + sizeof ".clfbin"];
    name[0] = '/';
    clf__sha256_hex(key, name + 1);
    memcpy(name + 65, ".clfbin", sizeof ".clfbin");
    return clf__concat(dir, name);
}

/* Read up to n bytes, retrying on EINTR and short reads; bytes read, or -1. */
static ssize_t read_full(int fd, void *buf, size_t n)
{
    size_t got = 0;
    while (got < n) {
        size_t want = n - got < IO_CHUNK ? n - got : IO_CHUNK;
        ssize_t r = read(fd, (unsigned char *)buf + got, want);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return -1;
        if (r == 0)
            break;
        got += (size_t)r;
    }
    return (ssize_t)got;
}

static int write_full(int fd, const void *buf, size_t n)
{
    size_t done = 0;
    while (done < n) {
        size_t want = n - done < IO_CHUNK ? n - done : IO_CHUNK;
        ssize_t r = write(fd, (const unsigned char *)buf + done, want);
        if (r < 0 && errno == EINTR)
            continue;
        if (r == 0)
            errno = EIO; /* no progress and no reason given; do not spin */
        if (r <= 0)
            return -1;
        done += (size_t)r;
    }
    return 0;
}

int clf__cache_load(const char *dir, const unsigned char key[32], unsigned char **bin,
                    size_t *len)
{
    return clf__cache_load_ex(dir, key, bin, len, NULL);
}

int clf__cache_load_ex(const char *dir, const unsigned char key[32], unsigned char **bin,
                       size_t *len, int *rejected)
{
    int hit = 0, invalid = 0, fd = -1;
    unsigned char hdr[CACHE_HEADER], digest[32], extra;
    unsigned char *buf = NULL;
    struct stat st, now;
    char *path = NULL;
    clf__sha256 c;

    if (rejected)
        *rejected = 0;
    if (!bin || !len)
        return 0;
    *bin = NULL;
    *len = 0;
    if (!(path = clf__cache_path(dir, key)))
        goto out;
    /* O_NONBLOCK: a FIFO planted at the path must not hang the open. */
    if ((fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)) < 0 || fstat(fd, &st) != 0 ||
        !S_ISREG(st.st_mode))
        goto out;
    invalid = 1;
    if ((uint64_t)st.st_size < CACHE_HEADER || read_full(fd, hdr, sizeof hdr) != CACHE_HEADER)
        goto out;
    uint64_t n = get_le(hdr + 44, 8);
    if (memcmp(hdr, "CLFLEETB", 8) != 0 || get_le(hdr + 8, 4) != CACHE_VERSION ||
        memcmp(hdr + 12, key, 32) != 0 || n > CACHE_MAX_PAYLOAD ||
        n != (uint64_t)st.st_size - CACHE_HEADER)
        goto out;
    if (!(buf = malloc(n ? (size_t)n : 1))) {
        invalid = 0; /* our problem, not the file's */
        goto out;
    }
    ssize_t got = read_full(fd, buf, (size_t)n);
    if (got < 0) {
        invalid = 0; /* an I/O error says nothing about the contents */
        goto out;
    }
    if ((uint64_t)got != n || read_full(fd, &extra, 1) != 0)
        goto out;
    clf__sha256_init(&c);
    clf__sha256_update(&c, buf, (size_t)n);
    clf__sha256_final(&c, digest);
    if (memcmp(digest, hdr + 52, 32) != 0)
        goto out;
    *bin = buf;
    *len = (size_t)n;
    buf = NULL;
    hit = 1;
    /* A hit makes the entry the most recently used, for clf__cache_trim() (CLFLEET_CACHE_MAX):
     * its modification time, since atime is often not kept (noatime, relatime). The digest,
     * not the time, says whether an entry is valid; a failure here only ages the entry. */
    (void)futimens(fd, NULL);
    invalid = 0;
out:
    if (rejected)
        *rejected = invalid;
    /* Remove a bad entry so it is rebuilt, unless a writer has meanwhile renamed
     * a fresh one into place (then the path names another file). */
    if (invalid && stat(path, &now) == 0 && now.st_dev == st.st_dev && now.st_ino == st.st_ino)
        unlink(path);
    if (fd >= 0)
        close(fd);
    free(buf);
    free(path);
    return hit;
}

/* mkdir -p with mode 0700 for every missing component. */
static clf_status make_dirs(const char *dir)
{
    char *p = clf__concat(dir, ""), *q;
    if (!p)
        return clf__fail(CLF_ERROR_OUT_OF_HOST_MEMORY, "cache: out of memory");
    for (q = p + 1;; q++) {
        if (*q != '/' && *q != '\0')
            continue;
        char saved = *q;
        *q = '\0';
        if (q[-1] != '/' && mkdir(p, 0700) != 0 && errno != EEXIST) {
            clf_status st = clf__fail(CLF_ERROR_IO, "cache: cannot create directory %s: %s", p,
                                      strerror(errno));
            free(p);
            return st;
        }
        *q = saved;
        if (!saved)
            break;
    }
    free(p);
    return CLF_SUCCESS;
}

/* Remove dir's temporary entries (".tmp-*", regular files) older than TMP_MAX_AGE_S. Best
 * effort: a sweep that fails costs only disk space, and another process may sweep too. */
static void sweep_stale(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    time_t now = time(NULL);
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        struct stat st;
        if (strncmp(e->d_name, ".tmp-", 5) != 0 ||
            fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 ||
            !S_ISREG(st.st_mode) || now - st.st_mtime < TMP_MAX_AGE_S)
            continue;
        if (unlinkat(dirfd(d), e->d_name, 0) == 0)
            clf__log(CLF_LOG_DEBUG, "cache: removed %s/%s, left by a writer an hour ago or more",
                     dir, e->d_name);
    }
    closedir(d);
}

/* 0 when nothing that rename() cannot replace is at path; else 1 (reported once per
 * process): a directory there, or one that cannot be removed. An empty directory is removed
 * (the entry then takes its place). Any other file is replaced by the rename itself. */
static int entry_blocked(const char *path)
{
    static atomic_int reported;
    struct stat st;
    if (lstat(path, &st) != 0 || !S_ISDIR(st.st_mode) || rmdir(path) == 0)
        return 0;
    int err = errno;
    if (!atomic_exchange(&reported, 1))
        clf__log(CLF_LOG_WARN, "cache: %s is a directory that cannot be removed (%s), so that "
                 "binary is built from source each time (reported once)", path, strerror(err));
    return 1;
}

clf_status clf__cache_store(const char *dir, const unsigned char key[32],
                            const unsigned char *bin, size_t len)
{
    clf_status st = CLF_SUCCESS;
    unsigned char hdr[CACHE_HEADER];
    char *path = NULL, *tmp = NULL;
    int fd = -1;
    clf__sha256 c;

    if (!dir || !key || (!bin && len))
        return clf__fail(CLF_ERROR_NULL_POINTER, "cache: NULL directory, key or binary");
    if (!*dir)
        return clf__fail(CLF_ERROR_INVALID_ARGUMENT, "cache: empty directory name");
    if ((uint64_t)len > CACHE_MAX_PAYLOAD)
        return clf__fail(CLF_ERROR_INVALID_ARGUMENT, "cache: %zu-byte binary exceeds 1 GiB",
                         len);
    if (!(path = clf__cache_path(dir, key)) || !(tmp = clf__concat(dir, "/.tmp-XXXXXX"))) {
        st = clf__fail(CLF_ERROR_OUT_OF_HOST_MEMORY, "cache: out of memory");
        goto out;
    }
    CLF__TRY(st, make_dirs(dir));
    sweep_stale(dir);
    if (entry_blocked(path)) {
        tmp[0] = '\0'; /* not created */
        goto out;       /* reported; the cache only saves time, the build goes on */
    }

    memcpy(hdr, "CLFLEETB", 8);
    put_le(hdr + 8, CACHE_VERSION, 4);
    memcpy(hdr + 12, key, 32);
    put_le(hdr + 44, len, 8);
    clf__sha256_init(&c);
    clf__sha256_update(&c, bin, len);
    clf__sha256_final(&c, hdr + 52);

    if ((fd = mkostemp(tmp, O_CLOEXEC)) < 0) {
        st = clf__fail(CLF_ERROR_IO, "cache: cannot create %s: %s", tmp, strerror(errno));
        tmp[0] = '\0'; /* nothing to unlink */
        goto out;
    }
    /* fsync before rename: otherwise a crash could leave the final name
     * pointing at an empty or partial file on some filesystems. */
    if (fchmod(fd, 0600) != 0 || write_full(fd, hdr, sizeof hdr) != 0 ||
        (len && write_full(fd, bin, len) != 0) || fsync(fd) != 0) {
        st = clf__fail(CLF_ERROR_IO, "cache: cannot write %s: %s", tmp, strerror(errno));
        goto out;
    }
    int rc = close(fd);
    fd = -1;
    if (rc != 0) {
        st = clf__fail(CLF_ERROR_IO, "cache: cannot write %s: %s", tmp, strerror(errno));
        goto out;
    }
    if (rename(tmp, path) != 0) {
        st = clf__fail(CLF_ERROR_IO, "cache: cannot rename to %s: %s", path, strerror(errno));
        goto out;
    }
    tmp[0] = '\0';
out:
    if (fd >= 0)
        close(fd);
    if (tmp && tmp[0])
        unlink(tmp);
    free(tmp);
    free(path);
    return st;
}

/* ---- the size limit (CLFLEET_CACHE_MAX) ---- */

typedef struct trim_entry {
    char name[64 + sizeof ".clfbin"];
    uint64_t bytes;
    struct timespec used;
} trim_entry;

static int older_first(const void *a, const void *b)
{
    const struct timespec *x = &((const trim_entry *)a)->used, *y = &((const trim_entry *)b)->used;
    if (x->tv_sec != y->tv_sec)
        return x->tv_sec < y->tv_sec ? -1 : 1;
    return x->tv_nsec < y->tv_nsec ? -1 : x->tv_nsec > y->tv_nsec;
}

static int is_entry_name(const char *name);

void clf__cache_trim(const char *dir, uint64_t max, const unsigned char keep[32])
{
    char keep_name[64 + sizeof ".clfbin"] = "";
    if (keep) {
        clf__sha256_hex(keep, keep_name);
        memcpy(keep_name + 64, ".clfbin", sizeof ".clfbin");
    }
    DIR *d = dir ? opendir(dir) : NULL;
    if (!d)
        return;
    trim_entry *e = NULL;
    size_t n = 0, cap = 0;
    uint64_t total = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        struct stat st;
        if (!is_entry_name(de->d_name) ||
            fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode))
            continue;
        total += (uint64_t)st.st_size;
        if (!strcmp(de->d_name, keep_name))
            continue;
        if (n == cap) {
            size_t ncap = cap ? 2 * cap : 64;
            trim_entry *t = ncap <= SIZE_MAX / sizeof *t ? realloc(e, ncap * sizeof *t) : NULL;
            if (!t)
                goto out; /* no memory to sort by age: leave the directory as it is */
            e = t;
            cap = ncap;
        }
        memcpy(e[n].name, de->d_name, sizeof e[n].name);
        e[n].bytes = (uint64_t)st.st_size;
        e[n].used = st.st_mtim;
        n++;
    }
    if (total <= max || n == 0) /* n == 0: only the entry just stored, which stays */
        goto out;
    qsort(e, n, sizeof *e, older_first);
    size_t removed = 0;
    uint64_t freed = 0;
    for (size_t i = 0; i < n && total > max; i++) {
        if (unlinkat(dirfd(d), e[i].name, 0) != 0)
            continue; /* gone already (another process trims too), or not ours to remove */
        total -= e[i].bytes;
        freed += e[i].bytes;
        removed++;
    }
    if (removed)
        clf__log(CLF_LOG_DEBUG, "cache: CLFLEET_CACHE_MAX=%llu: removed the %zu least recently "
                 "used binaries (%llu bytes) from %s", (unsigned long long)max, removed,
                 (unsigned long long)freed, dir);
out:
    closedir(d);
    free(e);
}

/* ---- what a cache directory holds, and emptying it (clfleet-info --cache) ---- */

/* An entry's name is exactly 64 lowercase hex digits and ".clfbin" (clf__cache_path()). The
 * test is strict so that clearing a directory the user pointed $CLFLEET_CACHE_DIR at by
 * mistake (their home, say) removes nothing of theirs. */
static int is_entry_name(const char *name)
{
    if (strlen(name) != 64 + sizeof ".clfbin" - 1 || strcmp(name + 64, ".clfbin") != 0)
        return 0;
    for (size_t i = 0; i < 64; i++)
        if (!((name[i] >= '0' && name[i] <= '9') || (name[i] >= 'a' && name[i] <= 'f')))
            return 0;
    return 1;
}

/* *dir: cache_dir, else the default directory (malloc'd). */
static clf_status cache_dir_of(char **dir, const char *cache_dir, const char *fn)
{
    if (cache_dir && !*cache_dir)
        return clf__fail(CLF_ERROR_INVALID_ARGUMENT, "%s: empty cache directory name", fn);
    *dir = cache_dir ? clf__concat(cache_dir, "") : clf__cache_default_dir();
    if (!*dir && cache_dir)
        return clf__fail(CLF_ERROR_OUT_OF_HOST_MEMORY, "%s: out of memory", fn);
    if (!*dir)
        return clf__fail(CLF_ERROR_IO, "%s: no cache directory ($CLFLEET_CACHE_DIR, "
                         "$XDG_CACHE_HOME and $HOME are unset)", fn);
    return CLF_SUCCESS;
}

clf_status clf_cache_info(clf_cache_stats *out, const char *cache_dir)
{
    if (!out)
        return clf__fail(CLF_ERROR_NULL_POINTER, "clf_cache_info: out is NULL");
    memset(out, 0, sizeof *out);
    char *dir = NULL;
    clf_status cs = clf__env_cache_max(getenv("CLFLEET_CACHE_MAX"), &out->limit);
    if (cs == CLF_SUCCESS)
        cs = cache_dir_of(&dir, cache_dir, "clf_cache_info");
    if (cs != CLF_SUCCESS)
        return cs;
    DIR *d = opendir(dir);
    if (!d) {
        /* No directory is an empty cache: nothing was built yet. */
        if (errno == ENOENT) {
            out->dir = dir;
            return CLF_SUCCESS;
        }
        clf_status st = clf__fail(CLF_ERROR_IO, "clf_cache_info: cannot read '%s': %s", dir,
                                  strerror(errno));
        free(dir);
        return st;
    }
    out->exists = 1;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        struct stat st;
        if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode))
            continue;
        if (is_entry_name(e->d_name)) {
            out->entries++;
            out->bytes += (uint64_t)st.st_size;
        } else if (strncmp(e->d_name, ".tmp-", 5) == 0) {
            out->temporary++;
            out->temporary_bytes += (uint64_t)st.st_size;
        } else if (strcmp(e->d_name, CLF__PERF_FILE) == 0) {
            out->perf_model = 1;
        }
    }
    closedir(d);
    out->dir = dir;
    return CLF_SUCCESS;
}

clf_status clf_cache_clear(size_t *removed, const char *cache_dir)
{
    if (removed)
        *removed = 0;
    char *dir = NULL;
    clf_status st = cache_dir_of(&dir, cache_dir, "clf_cache_clear");
    if (st != CLF_SUCCESS)
        return st;
    DIR *d = opendir(dir);
    if (!d) {
        if (errno != ENOENT)
            st = clf__fail(CLF_ERROR_IO, "clf_cache_clear: cannot read '%s': %s", dir,
                           strerror(errno));
        free(dir);
        return st;
    }
    /* Removing an entry while another process loads it is safe: the loader holds the file
     * open, and a fleet that misses it later rebuilds from source. Young temporary files
     * belong to writers still running (their rename would fail), so only stale ones go. */
    sweep_stale(dir);
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        struct stat sb;
        if (!is_entry_name(e->d_name) ||
            fstatat(dirfd(d), e->d_name, &sb, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(sb.st_mode))
            continue;
        if (unlinkat(dirfd(d), e->d_name, 0) == 0) {
            if (removed)
                (*removed)++;
        } else if (errno != ENOENT && st == CLF_SUCCESS) {
            /* Another process may have removed it first (ENOENT); anything else is kept to
             * report, and the other entries are still removed. */
            st = clf__fail(CLF_ERROR_IO, "clf_cache_clear: cannot remove '%s/%s': %s", dir,
                           e->d_name, strerror(errno));
        }
    }
    closedir(d);
    free(dir);
    return st;
}

/* ---- SHA-256 (FIPS 180-4) ---- */

static const uint32_t K[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4,
    0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe,
    0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f,
    0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7,
    0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc,
    0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
    0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116,
    0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
    0xc67178f2,
};

static uint32_t rotr(uint32_t x, unsigned n)
{
    return (x >> n) | (x << (32 - n));
}

/* Process one 64-byte block. Big-endian loads are done byte by byte so the
 * code is independent of the host's endianness and alignment. */
static void compress(uint32_t h[8], const unsigned char *p)
{
    uint32_t w[64];
    for (unsigned i = 0; i < 16; i++)
        w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 |
               (uint32_t)p[4 * i + 2] << 8 | (uint32_t)p[4 * i + 3];
    for (unsigned i = 16; i < 64; i++) {
        uint32_t s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >> 3);
        uint32_t s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >> 10);
        w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }

    uint32_t a = h[0], b = h[1], c = h[2], d = h[3];
    uint32_t e = h[4], f = h[5], g = h[6], k = h[7];
    for (unsigned i = 0; i < 64; i++) {
        uint32_t t1 = k + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ((e & f) ^ (~e & g)) +
                      K[i] + w[i];
        uint32_t t2 = (rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
        k = g;
        g = f;
        f = e;
        e = d + t1;
        d = c;
        c = b;
        b = a;
        a = t1 + t2;
    }
    h[0] += a;
    h[1] += b;
    h[2] += c;
    h[3] += d;
    h[4] += e;
    h[5] += f;
    h[6] += g;
    h[7] += k;
}

void clf__sha256_init(clf__sha256 *c)
{
    static const uint32_t iv[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                   0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
    memcpy(c->h, iv, sizeof iv);
    c->len = 0;
    c->nbuf = 0;
}

void clf__sha256_update(clf__sha256 *c, const void *data, size_t n)
{
    const unsigned char *p = data;
    if (n == 0)
        return; /* data may be NULL then */
    /* The message length is counted modulo 2^64 bytes, as FIPS 180-4 counts it in
     * bits modulo 2^64: inputs that large cannot occur here. */
    c->len += n;
    if (c->nbuf > 0) {
        size_t take = 64 - c->nbuf < n ? 64 - c->nbuf : n;
        memcpy(c->buf + c->nbuf, p, take);
        c->nbuf += take;
        p += take;
        n -= take;
        if (c->nbuf < 64)
            return;
        compress(c->h, c->buf);
        c->nbuf = 0;
    }
    for (; n >= 64; p += 64, n -= 64)
        compress(c->h, p);
    if (n > 0)
        memcpy(c->buf, p, n);
    c->nbuf = n;
}

void clf__sha256_final(clf__sha256 *c, unsigned char out[32])
{
    uint64_t bits = c->len * 8;
    /* Padding: a 1 bit, zeros up to 56 mod 64, then the 64-bit big-endian length. */
    c->buf[c->nbuf++] = 0x80;
    if (c->nbuf > 56) {
        memset(c->buf + c->nbuf, 0, 64 - c->nbuf);
        compress(c->h, c->buf);
        c->nbuf = 0;
    }
    memset(c->buf + c->nbuf, 0, 56 - c->nbuf);
    for (unsigned i = 0; i < 8; i++)
        c->buf[56 + i] = (unsigned char)(bits >> (56 - 8 * i));
    compress(c->h, c->buf);
    for (unsigned i = 0; i < 8; i++) {
        out[4 * i] = (unsigned char)(c->h[i] >> 24);
        out[4 * i + 1] = (unsigned char)(c->h[i] >> 16);
        out[4 * i + 2] = (unsigned char)(c->h[i] >> 8);
        out[4 * i + 3] = (unsigned char)c->h[i];
    }
    /* Leave no trace of the message in the context. */
    memset(c->buf, 0, sizeof c->buf);
    c->nbuf = 0;
}

void clf__sha256_hex(const unsigned char d[32], char hex[65])
{
    static const char digits[] = "0123456789abcdef";
    for (unsigned i = 0; i < 32; i++) {
        hex[2 * i] = digits[d[i] >> 4];
        hex[2 * i + 1] = digits[d[i] & 15];
    }
    hex[64] = '\0';
}
