/*
 * Learned throughput per (kernel, device), see perfmodel.h.
 *
 * Why a median of the last 8 samples rather than an EMA: a single outlier (a device shared
 * with another process for one launch, a page-fault storm) moves a median by at most one
 * rank, i.e. to a value already in the window, and the estimate follows a real change
 * within half a window; an EMA, even clipped to +-50% per update, lets every outlier pull
 * the estimate and needs several samples to recover. Eight doubles per key are nothing.
 *
 * The chunk line's fit is perffit.c's (Theil-Sen, and why), the file's text (one entry per
 * line) perftext.c's, its atomic replacement perffile.c's.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* newlocale/uselocale, getline */
#endif

#include "perfmodel.h"
#include "workprof.h"
#include "util/util.h" /* clf__cache_default_dir, clf__sb */

#include <errno.h>
#include <locale.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Lives in error.c; declared here so that this file needs no OpenCL header. */
clf_status clf__fail(clf_status s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* A model file larger than this is not ours (or is damaged): it is ignored, not read. */
#define PERF_MAX_FILE (16u << 20)

typedef struct perf_entry {
    char *kernel, *device;
    uint64_t hash;
    double s[CLF__PERF_WINDOW]; /* ring: sample i (oldest first) at s[(head + i) % WINDOW] */
    unsigned n, head;
    int seen; /* a sample arrived in this process (the cold one, dropped) */
    /* Chunk samples, unordered; age: a sequence number (oldest is smallest). */
    uint64_t cu[CLF__PERF_CHUNKS], cage[CLF__PERF_CHUNKS], cseq;
    double ct[CLF__PERF_CHUNKS];
    unsigned nc;
    int cseen; /* a chunk sample arrived in this process (the cold one, dropped) */
} perf_entry;

struct clf__perf_model {
    pthread_mutex_t lock;      /* the table */
    pthread_mutex_t save_lock; /* serialises saves */
    char *path;                /* NULL: memory only */
    perf_entry *e;
    size_t ne, cap_e;
    size_t *slot; /* open addressing: index + 1 into e, 0 = empty; size a power of two */
    size_t nslot;
    /* Where each kernel's work lies along its range, for STATIC's cuts (memory only: a
     * profile is cheap to learn again and tied to one range size). Created when first asked
     * for, under lock. */
    clf__wprof_table *prof;
};

/* ---- the table ---- */

static uint64_t key_hash(const char *kernel, const char *device)
{
    /* FNV-1a over kernel, a NUL (which no key contains), then device. */
    uint64_t h = 1469598103934665603ull;
    for (const unsigned char *c = (const unsigned char *)kernel; *c; c++)
        h = (h ^ *c) * 1099511628211ull;
    h = (h ^ 0) * 1099511628211ull;
    for (const unsigned char *c = (const unsigned char *)device; *c; c++)
        h = (h ^ *c) * 1099511628211ull;
    return h;
}

static perf_entry *find(const clf__perf_model *m, const char *kernel, const char *device,
                        uint64_t h)
{
    if (m->nslot == 0)
        return NULL;
    for (size_t i = h & (m->nslot - 1);; i = (i + 1) & (m->nslot - 1)) {
        size_t s = m->slot[i];
        if (s == 0)
            return NULL;
        perf_entry *e = &m->e[s - 1];
        if (e->hash == h && strcmp(e->kernel, kernel) == 0 && strcmp(e->device, device) == 0)
            return e;
    }
}

static void slot_insert(size_t *slot, size_t nslot, uint64_t h, size_t index)
{
    size_t i = h & (nslot - 1);
    while (slot[i] != 0)
        i = (i + 1) & (nslot - 1);
    slot[i] = index + 1;
}

/* Add an entry taking ownership of kernel and device (freed on failure); NULL: no memory. */
static perf_entry *add(clf__perf_model *m, char *kernel, char *device, uint64_t h)
{
    /* Keep the load factor at most 1/2 so that probes stay short and always end. */
    if ((m->ne + 1) * 2 > m->nslot) {
        size_t n = m->nslot ? m->nslot * 2 : 64;
        size_t *ns = n <= SIZE_MAX / sizeof *ns ? calloc(n, sizeof *ns) : NULL;
        if (!ns)
            goto fail;
        for (size_t i = 0; i < m->ne; i++)
            slot_insert(ns, n, m->e[i].hash, i);
        free(m->slot);
        m->slot = ns;
        m->nslot = n;
    }
    if (m->ne == m->cap_e) {
        size_t n = m->cap_e ? m->cap_e * 2 : 32;
        perf_entry *ne = n <= SIZE_MAX / sizeof *ne ? realloc(m->e, n * sizeof *ne) : NULL;
        if (!ne)
            goto fail;
        m->e = ne;
        m->cap_e = n;
    }
    perf_entry *e = &m->e[m->ne];
    memset(e, 0, sizeof *e);
    e->kernel = kernel;
    e->device = device;
    e->hash = h;
    slot_insert(m->slot, m->nslot, h, m->ne);
    m->ne++;
    return e;
fail:
    free(kernel);
    free(device);
    return NULL;
}

static void push(perf_entry *e, double v)
{
    if (e->n < CLF__PERF_WINDOW) {
        e->s[(e->head + e->n) % CLF__PERF_WINDOW] = v;
        e->n++;
    } else {
        e->s[e->head] = v;
        e->head = (e->head + 1) % CLF__PERF_WINDOW;
    }
}

/* The median of the entry's launch-level samples (e->n > 0; their order does not matter). */
static double median(const perf_entry *e)
{
    double v[CLF__PERF_WINDOW];
    memcpy(v, e->s, e->n * sizeof *v);
    return clf__median(v, e->n);
}

/* The entry's chunk samples, oldest first, into out; returns how many. */
static size_t chunks_in_order(const perf_entry *e, clf__perf_chunk *out)
{
    unsigned idx[CLF__PERF_CHUNKS];
    for (unsigned i = 0; i < e->nc; i++) {
        unsigned j = i;
        for (; j > 0 && e->cage[idx[j - 1]] > e->cage[i]; j--)
            idx[j] = idx[j - 1];
        idx[j] = i;
    }
    for (unsigned i = 0; i < e->nc; i++) {
        out[i].units = e->cu[idx[i]];
        out[i].seconds = e->ct[idx[i]];
    }
    return e->nc;
}

static void push_chunk(perf_entry *e, uint64_t units, double seconds)
{
    unsigned at = e->nc;
    if (e->nc == CLF__PERF_CHUNKS) {
        /* Replace the oldest of a similar size, else the oldest: keep the sizes diverse. */
        unsigned oldest = 0, similar = CLF__PERF_CHUNKS;
        for (unsigned i = 0; i < e->nc; i++) {
            double r = (double)e->cu[i] / (double)units;
            if (e->cage[i] < e->cage[oldest])
                oldest = i;
            if (r >= 0.8 && r <= 1.25 &&
                (similar == CLF__PERF_CHUNKS || e->cage[i] < e->cage[similar]))
                similar = i;
        }
        at = similar < CLF__PERF_CHUNKS ? similar : oldest;
    } else {
        e->nc++;
    }
    e->cu[at] = units;
    e->ct[at] = seconds;
    e->cage[at] = ++e->cseq;
}

/* The fit of entry e (under the lock). */
static void entry_fit(const perf_entry *e, clf__perf_fit *f)
{
    clf__perf_chunk c[CLF__PERF_CHUNKS];
    double v[CLF__PERF_WINDOW];
    memset(f, 0, sizeof *f);
    f->fixed_s = -1;
    f->samples = e->n;
    f->chunks = e->nc;
    if (e->n > 0) {
        f->units_per_s = median(e);
        for (unsigned i = 0; i < e->n; i++)
            v[i] = e->s[i];
        f->iqr = clf__perf_iqr(v, e->n);
    }
    size_t n = chunks_in_order(e, c);
    if (!clf__perf_line(c, n, &f->rate, &f->fixed_s)) {
        f->rate = 0;
        f->fixed_s = -1;
    }
}

static char *dup_str(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d)
        memcpy(d, s, n);
    return d;
}

/* ---- the file ---- */

/*
 * Read the file's entries into the model: replacing what is there (on open), or only for
 * keys the model lacks (merging before a save). Bad lines are skipped. 0, or -1 with errno
 * when the file exists but cannot be read; a missing file reads as empty.
 */
static int load(clf__perf_model *m, int only_missing)
{
    FILE *f = fopen(m->path, "r");
    if (!f)
        return errno == ENOENT ? 0 : -1;
    struct stat st;
    if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > PERF_MAX_FILE) {
        fclose(f);
        return 0;
    }
    locale_t c = newlocale(LC_NUMERIC_MASK, "C", (locale_t)0);
    locale_t old = c ? uselocale(c) : (locale_t)0;
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    while ((len = getline(&line, &cap, f)) > 0) {
        char *kernel, *device;
        double s[CLF__PERF_WINDOW];
        clf__perf_chunk ch[CLF__PERF_CHUNKS];
        unsigned n, nc;
        if (line[len - 1] != '\n')
            break; /* truncated last line */
        line[len - 1] = '\0';
        if (strlen(line) != (size_t)len - 1 || clf__perf_text_parse(line, &kernel, &device, s, &n, ch, &nc) != 0)
            continue; /* a NUL byte inside, or malformed */
        uint64_t h = key_hash(kernel, device);
        perf_entry *e = find(m, kernel, device, h);
        if (e && only_missing)
            continue;
        if (!e) {
            char *k = dup_str(kernel), *d = dup_str(device);
            if (!k || !d) {
                free(k);
                free(d);
                continue;
            }
            e = add(m, k, d, h);
            if (!e)
                continue;
        }
        e->n = e->head = 0;
        for (unsigned i = 0; i < n; i++)
            push(e, s[i]);
        e->nc = 0;
        for (unsigned i = 0; i < nc; i++)
            push_chunk(e, ch[i].units, ch[i].seconds);
    }
    free(line);
    if (c) {
        uselocale(old);
        freelocale(c);
    }
    fclose(f);
    return 0;
}

/* The file's lines into b (perftext.c). */
static void write_entries(const clf__perf_model *m, clf__sb *b)
{
    for (size_t i = 0; i < m->ne; i++) {
        const perf_entry *e = &m->e[i];
        clf__perf_chunk c[CLF__PERF_CHUNKS];
        if (e->n == 0 && e->nc == 0)
            continue;
        size_t nc = chunks_in_order(e, c);
        double v[CLF__PERF_WINDOW];
        for (unsigned j = 0; j < e->n; j++)
            v[j] = e->s[(e->head + j) % CLF__PERF_WINDOW];
        clf__perf_text_write(b, e->kernel, e->device, v, e->n, c, nc);
    }
}

/* ---- API ---- */

clf_status clf__perf_open(clf__perf_model **out, const char *path)
{
    if (!out)
        return clf__fail(CLF_ERROR_NULL_POINTER, "perfmodel: out is NULL");
    *out = NULL;
    clf__perf_model *m = calloc(1, sizeof *m);
    if (!m)
        return clf__fail(CLF_ERROR_OUT_OF_HOST_MEMORY, "perfmodel: out of memory");
    if (pthread_mutex_init(&m->lock, NULL) != 0) {
        free(m);
        return clf__fail(CLF_ERROR_OUT_OF_HOST_MEMORY, "perfmodel: cannot create a mutex");
    }
    if (pthread_mutex_init(&m->save_lock, NULL) != 0) {
        pthread_mutex_destroy(&m->lock);
        free(m);
        return clf__fail(CLF_ERROR_OUT_OF_HOST_MEMORY, "perfmodel: cannot create a mutex");
    }
    if (path) {
        m->path = dup_str(path);
        if (!m->path) {
            clf__perf_close(m);
            return clf__fail(CLF_ERROR_OUT_OF_HOST_MEMORY, "perfmodel: out of memory");
        }
        if (load(m, 0) != 0) {
            int err = errno;
            clf__perf_close(m);
            return clf__fail(CLF_ERROR_IO, "perfmodel: cannot read '%s': %s", path, strerror(err));
        }
    }
    *out = m;
    return CLF_SUCCESS;
}

void clf__perf_close(clf__perf_model *m)
{
    if (!m)
        return;
    for (size_t i = 0; i < m->ne; i++) {
        free(m->e[i].kernel);
        free(m->e[i].device);
    }
    free(m->e);
    free(m->slot);
    free(m->path);
    clf__wprof_table_destroy(m->prof);
    pthread_mutex_destroy(&m->save_lock);
    pthread_mutex_destroy(&m->lock);
    free(m);
}

/* The entry of (kernel, device), created when missing; NULL: out of memory. Under m->lock. */
static perf_entry *find_or_add(clf__perf_model *m, const char *kernel, const char *device)
{
    uint64_t h = key_hash(kernel, device);
    perf_entry *e = find(m, kernel, device, h);
    if (!e) {
        char *k = dup_str(kernel), *d = dup_str(device);
        if (k && d) {
            e = add(m, k, d, h); /* frees k and d on failure */
        } else {
            free(k);
            free(d);
        }
    }
    return e;
}

/* clf__perf_record(), and with replace set clf__perf_record_replace(). */
static clf_status record_one(clf__perf_model *m, const char *kernel, const char *device,
                             uint64_t units, double seconds, int replace, int *kept)
{
    clf_status st = CLF_SUCCESS;
    if (kept)
        *kept = 0;
    if (!m || !kernel || !device)
        return clf__fail(CLF_ERROR_NULL_POINTER, "perfmodel: NULL model or key");
    if (units == 0 || !isfinite(seconds) || seconds <= 0 || !isfinite((double)units / seconds))
        return clf__fail(CLF_ERROR_INVALID_ARGUMENT, "perfmodel: bad sample of %llu units in %g s",
                         (unsigned long long)units, seconds);
    pthread_mutex_lock(&m->lock);
    perf_entry *e = find_or_add(m, kernel, device);
    if (!e) {
        st = clf__fail(CLF_ERROR_OUT_OF_HOST_MEMORY, "perfmodel: out of memory");
    } else if (!e->seen) {
        e->seen = 1; /* the cold sample: builds, first touch, cold caches */
    } else {
        /* Replace: the oldest goes (a full window's push overwrites it); below a full window
         * the samples stay at 0 .. n-1, where median() and entry_fit() read them. */
        if (replace && e->n > 0 && e->n < CLF__PERF_WINDOW)
            memmove(&e->s[0], &e->s[1], --e->n * sizeof *e->s);
        push(e, (double)units / seconds);
        if (kept)
            *kept = 1;
    }
    pthread_mutex_unlock(&m->lock);
    return st;
}

clf_status clf__perf_record(clf__perf_model *m, const char *kernel, const char *device,
                            uint64_t units, double seconds)
{
    return record_one(m, kernel, device, units, seconds, 0, NULL);
}

clf_status clf__perf_record_replace(clf__perf_model *m, const char *kernel, const char *device,
                                    uint64_t units, double seconds, int *kept)
{
    return record_one(m, kernel, device, units, seconds, 1, kept);
}

clf_status clf__perf_record_chunks(clf__perf_model *m, const char *kernel, const char *device,
                                   const clf__perf_chunk *c, size_t n)
{
    clf_status st = CLF_SUCCESS;
    if (!m || !kernel || !device || (!c && n))
        return clf__fail(CLF_ERROR_NULL_POINTER, "perfmodel: NULL model, key or samples");
    if (n == 0)
        return CLF_SUCCESS;
    pthread_mutex_lock(&m->lock);
    perf_entry *e = find_or_add(m, kernel, device);
    if (!e) {
        st = clf__fail(CLF_ERROR_OUT_OF_HOST_MEMORY, "perfmodel: out of memory");
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        if (c[i].units == 0 || !isfinite(c[i].seconds) || c[i].seconds <= 0)
            continue;
        if (!e->cseen)
            e->cseen = 1; /* the cold chunk: builds, first touch, cold caches */
        else
            push_chunk(e, c[i].units, c[i].seconds);
    }
out:
    pthread_mutex_unlock(&m->lock);
    return st;
}

int clf__perf_forget(clf__perf_model *m, const char *kernel, const char *device)
{
    perf_entry *e = NULL;
    if (m && kernel && device) {
        pthread_mutex_lock(&m->lock);
        if ((e = find(m, kernel, device, key_hash(kernel, device))) != NULL) {
            e->n = e->head = e->nc = 0;
            e->seen = e->cseen = 1; /* the next samples are kept: the device is warm */
        }
        pthread_mutex_unlock(&m->lock);
    }
    return e != NULL;
}

int clf__perf_get(clf__perf_model *m, const char *kernel, const char *device, clf__perf_fit *out)
{
    int known = 0;
    if (!m || !kernel || !device || !out)
        return 0;
    pthread_mutex_lock(&m->lock);
    const perf_entry *e = find(m, kernel, device, key_hash(kernel, device));
    if (e && (e->n > 0 || e->nc > 0)) {
        entry_fit(e, out);
        known = 1;
    }
    pthread_mutex_unlock(&m->lock);
    return known;
}

int clf__perf_weight(clf__perf_model *m, const char *kernel, const char *device,
                     double *units_per_s)
{
    int known = 0;
    if (!m || !kernel || !device)
        return 0;
    pthread_mutex_lock(&m->lock);
    const perf_entry *e = find(m, kernel, device, key_hash(kernel, device));
    if (e && e->n > 0) {
        known = 1;
        if (units_per_s)
            *units_per_s = median(e);
    }
    pthread_mutex_unlock(&m->lock);
    return known;
}

size_t clf__perf_weights(clf__perf_model *m, const char *kernel, size_t ndev,
                         const char *const *devices, double *out)
{
    size_t known = 0;
    if (!m || !kernel || !devices || !out)
        return 0;
    pthread_mutex_lock(&m->lock);
    for (size_t i = 0; i < ndev; i++) {
        const perf_entry *e =
            devices[i] ? find(m, kernel, devices[i], key_hash(kernel, devices[i])) : NULL;
        out[i] = e && e->n > 0 ? median(e) : 0;
        known += out[i] > 0;
    }
    pthread_mutex_unlock(&m->lock);
    return known;
}

size_t clf__perf_weights_named(clf__perf_model *m, const char *name, size_t ndev,
                               const char *const *devices, double *out)
{
    size_t best = 0, nl = name ? strlen(name) : 0;
    if (!m || !name || !devices || !out)
        return 0;
    for (size_t i = 0; i < ndev; i++)
        out[i] = 0;
    double *tmp = malloc((ndev ? ndev : 1) * sizeof *tmp);
    if (!tmp)
        return 0;
    pthread_mutex_lock(&m->lock);
    for (size_t j = 0; j < m->ne; j++) {
        const char *k = m->e[j].kernel;
        if (strncmp(k, name, nl) != 0 || (k[nl] != '\0' && k[nl] != '@'))
            continue;
        size_t known = 0;
        for (size_t i = 0; i < ndev; i++) {
            const perf_entry *e = devices[i] ? find(m, k, devices[i], key_hash(k, devices[i]))
                                             : NULL;
            tmp[i] = e && e->n > 0 ? median(e) : 0;
            known += tmp[i] > 0;
        }
        if (known > best) {
            best = known;
            memcpy(out, tmp, ndev * sizeof *tmp);
        }
    }
    pthread_mutex_unlock(&m->lock);
    free(tmp);
    return best;
}

double clf__perf_link_bps(clf__perf_model *m, const char *dkey, const char *dir, int unified)
{
    double bps = 0;
    if (m && dkey && dir && clf__perf_weight(m, dir, dkey, &bps) && bps > 0)
        return bps;
    return unified ? CLF__GUESS_LOCAL_BPS : CLF__GUESS_LINK_BPS;
}

clf_status clf__perf_save(clf__perf_model *m)
{
    clf_status st = CLF_SUCCESS;
    clf__sb b = {0};
    if (!m)
        return clf__fail(CLF_ERROR_NULL_POINTER, "perfmodel: NULL model");
    if (!m->path)
        return CLF_SUCCESS;
    /* One save at a time, so that an older snapshot never replaces a newer one. */
    pthread_mutex_lock(&m->save_lock);
    pthread_mutex_lock(&m->lock);
    /* Keep what other processes saved under keys we never saw; ours win for the rest. */
    (void)load(m, 1);
    /* Only the snapshot is taken under the lock: recording threads never wait on a disk. */
    write_entries(m, &b);
    pthread_mutex_unlock(&m->lock);
    if (b.oom)
        st = clf__fail(CLF_ERROR_OUT_OF_HOST_MEMORY, "perfmodel: out of memory");
    else
        st = clf__perf_write_file(m->path, b.s ? b.s : "", b.len);
    free(b.s);
    pthread_mutex_unlock(&m->save_lock);
    return st;
}

/* ---- the model a cache directory holds (clfleet-info --perf; --perf-reset: perffile.c) ---- */

clf_status clf_perf_model_json(char **out, const char *cache_dir)
{
    if (!out)
        return clf__fail(CLF_ERROR_NULL_POINTER, "clf_perf_model_json: out is NULL");
    *out = NULL;
    char *path = NULL;
    clf_status st = clf__perf_model_path(cache_dir, "clf_perf_model_json", &path);
    if (st != CLF_SUCCESS)
        return st;
    clf__perf_model *m = NULL;
    st = clf__perf_open(&m, path);
    if (st != CLF_SUCCESS) {
        free(path);
        return st;
    }
    clf__sb b = {0};
    clf__sb_printf(&b, "{\"file\":");
    clf__sb_json_string(&b, path);
    clf__sb_printf(&b, ",\"entries\":[");
    size_t k = 0;
    for (size_t i = 0; i < m->ne; i++) {
        const perf_entry *e = &m->e[i];
        clf__perf_fit f;
        /* Listed once a launch sample is known, as before the chunk lines: a first launch
         * (its launch sample dropped as cold) leaves only chunks, and no speed to show. */
        if (e->n == 0)
            continue;
        entry_fit(e, &f);
        clf__sb_printf(&b, k++ ? ",\n{\"kernel\":" : "\n{\"kernel\":");
        clf__sb_json_string(&b, e->kernel);
        clf__sb_printf(&b, ",\"device\":");
        clf__sb_json_string(&b, e->device);
        /* null, not 0, where nothing is known: 0 would read as a measured value. */
        clf__sb_printf(&b, ",\"samples\":%u,\"units_per_s\":%.6g,\"iqr_units_per_s\":%.6g", e->n,
                       f.units_per_s, f.iqr);
        clf__sb_printf(&b, ",\"chunks\":%u,\"rate_units_per_s\":", e->nc);
        clf__sb_printf(&b, f.rate > 0 ? "%.6g" : "null", f.rate);
        clf__sb_printf(&b, ",\"fixed_us\":");
        clf__sb_printf(&b, f.fixed_s >= 0 ? "%.6g}" : "null}", f.fixed_s * 1e6);
    }
    clf__sb_printf(&b, "\n]}");
    if (b.oom) {
        free(b.s);
        st = clf__fail(CLF_ERROR_OUT_OF_HOST_MEMORY, "clf_perf_model_json: out of memory");
        goto out;
    }
    *out = b.s;
out:
    clf__perf_close(m);
    free(path);
    return st;
}

clf__wprof_table *clf__perf_profiles(clf__perf_model *m)
{
    if (!m)
        return NULL;
    pthread_mutex_lock(&m->lock);
    if (!m->prof && clf__wprof_table_create(&m->prof) != CLF_SUCCESS)
        m->prof = NULL; /* no memory: launches go on without profiles */
    clf__wprof_table *t = m->prof;
    pthread_mutex_unlock(&m->lock);
    return t;
}
