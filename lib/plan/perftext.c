/*
 * The cost model's file as text (perfmodel.c reads and writes it, perffile.c replaces it):
 *
 * Its format: one entry per line, fields separated by tabs:
 *   v2 <kernel> <device> <n> <s1> ... <sn> <m> <u1> <t1> ... <um> <tm>
 *      (launch samples oldest first, units per second; chunk samples oldest first, units
 *      and seconds)
 *   v1 <kernel> <device> <n> <s1> ... <sn>      (read only: files of earlier versions)
 * The file keeps its name perf-v1.tsv so that the cache's accounting and clf_perf_model_reset
 * find it; earlier versions skip the v2 lines (and relearn).
 * Keys escape backslash, tab, newline and carriage return as \\ \t \n \r. A line that is
 * not exactly of this form, including a last line without its newline, is skipped.
 */
#include "perfmodel.h"
#include "util/util.h" /* clf__sb */

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static void write_escaped(clf__sb *b, const char *s)
{
    for (; *s; s++) {
        switch (*s) {
        case '\\': clf__sb_printf(b, "\\\\"); break;
        case '\t': clf__sb_printf(b, "\\t"); break;
        case '\n': clf__sb_printf(b, "\\n"); break;
        case '\r': clf__sb_printf(b, "\\r"); break;
        default: clf__sb_printf(b, "%c", *s);
        }
    }
}

/* Undo write_escaped() in place; -1 for a bad escape or a raw carriage return. */
static int unescape(char *s)
{
    char *w = s;
    for (char *r = s; *r; r++) {
        if (*r == '\r')
            return -1;
        if (*r != '\\') {
            *w++ = *r;
            continue;
        }
        switch (*++r) {
        case '\\': *w++ = '\\'; break;
        case 't': *w++ = '\t'; break;
        case 'n': *w++ = '\n'; break;
        case 'r': *w++ = '\r'; break;
        default: return -1; /* including a backslash ending the field */
        }
    }
    *w = '\0';
    return 0;
}

/* A decimal count of at most two digits, no sign or leading zero, up to max; -1 if not. */
static int parse_count(const char *d, unsigned max)
{
    if (d[0] == '0' && d[1] == '\0')
        return 0;
    if (d[0] < '1' || d[0] > '9')
        return -1;
    unsigned v = (unsigned)(d[0] - '0');
    if (d[1] != '\0') {
        if (d[1] < '0' || d[1] > '9' || d[2] != '\0')
            return -1;
        v = v * 10 + (unsigned)(d[1] - '0');
    }
    return v <= max ? (int)v : -1;
}

/* A finite number > 0, the whole field; -1 if not. */
static int parse_positive(const char *f, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(f, &end);
    if (errno != 0 || end == f || *end != '\0' || !isfinite(v) || v <= 0)
        return -1;
    *out = v;
    return 0;
}

/* A v2 line split into nf fields f: its samples into s, n, c, nc; 0 on success. */
static int parse_v2(char **f, size_t nf, double *s, unsigned *n, clf__perf_chunk *c,
                    unsigned *nc)
{
    if (nf < 5)
        return -1;
    int cnt = parse_count(f[3], CLF__PERF_WINDOW);
    if (cnt < 0 || nf < 5 + (size_t)cnt)
        return -1;
    int ccnt = parse_count(f[4 + cnt], CLF__PERF_CHUNKS);
    if (ccnt < 0 || cnt + ccnt == 0 || nf != 5 + (size_t)cnt + 2 * (size_t)ccnt)
        return -1;
    for (int i = 0; i < cnt; i++)
        if (parse_positive(f[4 + i], &s[i]) != 0)
            return -1;
    for (int i = 0; i < ccnt; i++) {
        double u;
        if (parse_positive(f[5 + cnt + 2 * i], &u) != 0 || u > 0x1p63 || u != floor(u) ||
            parse_positive(f[6 + cnt + 2 * i], &c[i].seconds) != 0)
            return -1;
        c[i].units = (uint64_t)u;
    }
    *n = (unsigned)cnt;
    *nc = (unsigned)ccnt;
    return 0;
}

int clf__perf_text_parse(char *line, char **kernel, char **device, double *s, unsigned *n,
                         clf__perf_chunk *ch, unsigned *nc)
{
    char *f[3 + 1 + CLF__PERF_WINDOW + 1 + 2 * CLF__PERF_CHUNKS];
    size_t nf = 0;
    for (char *c = line;;) {
        if (nf == sizeof f / sizeof f[0])
            return -1;
        f[nf++] = c;
        c = strchr(c, '\t');
        if (!c)
            break;
        *c++ = '\0';
    }
    *nc = 0;
    if (strcmp(f[0], "v2") == 0) {
        if (parse_v2(f, nf, s, n, ch, nc) != 0)
            return -1;
    } else {
        /* v1: 1 to CLF__PERF_WINDOW launch samples, no chunks. */
        int cnt = nf >= 5 && strcmp(f[0], "v1") == 0 ? parse_count(f[3], CLF__PERF_WINDOW) : -1;
        if (cnt < 1 || nf != 4 + (size_t)cnt)
            return -1;
        for (int i = 0; i < cnt; i++)
            if (parse_positive(f[4 + i], &s[i]) != 0)
                return -1;
        *n = (unsigned)cnt;
    }
    if (unescape(f[1]) != 0 || unescape(f[2]) != 0)
        return -1;
    *kernel = f[1];
    *device = f[2];
    return 0;
}

void clf__perf_text_write(struct clf__sb *b, const char *kernel, const char *device,
                          const double *s, unsigned n, const clf__perf_chunk *c, size_t nc)
{
    clf__sb_printf(b, "v2\t");
    write_escaped(b, kernel);
    clf__sb_printf(b, "\t");
    write_escaped(b, device);
    clf__sb_printf(b, "\t%u", n);
    for (unsigned j = 0; j < n; j++)
        clf__sb_printf(b, "\t%.17g", s[j]);
    clf__sb_printf(b, "\t%zu", nc);
    for (size_t j = 0; j < nc; j++)
        clf__sb_printf(b, "\t%llu\t%.17g", (unsigned long long)c[j].units, c[j].seconds);
    clf__sb_printf(b, "\n");
}
