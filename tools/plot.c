/*
 * The SVG charts of clfleet-bench --plot (plot.h). Data are kept until clf_plot_write(), which
 * lays out every panel: ranges and ticks from the data, then axes, grid, lines with markers,
 * bars and a legend. Every number goes out through the C locale (uselocale() around the
 * writing, as lib/util/names.c does for JSON): under a decimal-comma LC_NUMERIC "%.1f" would
 * write "12,5" and break the coordinate lists.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* uselocale(), newlocale() */
#endif
#include "plot.h"

#include <errno.h>
#include <locale.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WIDTH 820.0     /* the whole chart */
#define CHAR_W 7.2      /* about the width of a character at 12 px, for the layout */
#define XY_HEIGHT 260.0 /* plot area of an x-y panel */
#define ROW_HEIGHT 22.0 /* one row of a rows panel */
#define PANEL_TOP 34.0  /* panel title above the plot area */
#define PANEL_BOTTOM 52.0 /* tick labels and the x label below it */

static const char *const PALETTE[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                                      "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};
#define NPALETTE (sizeof PALETTE / sizeof PALETTE[0])

typedef struct series {
    char *name;
    double *x, *y;
    size_t n;
} series;

typedef struct bar {
    size_t row;
    double x0, x1;
    unsigned color;
    char *label;
} bar;

typedef struct key {
    unsigned color;
    char *name;
} key;

typedef struct panel {
    unsigned flags;
    char *title, *xlabel, *ylabel;
    series *s;
    size_t ns;
    bar *b;
    size_t nb;
    char **rows;
    size_t nrows;
    key *k;
    size_t nk;
} panel;

struct clf_plot {
    char *title;
    panel *p;
    size_t np;
    int oom; /* an allocation failed: clf_plot_write() says so */
};

/* ---- building ------------------------------------------------------------------------------- */

static char *dup_or_oom(clf_plot *p, const char *s)
{
    char *d = strdup(s ? s : "");
    if (!d)
        p->oom = 1;
    return d;
}

/* Room for one more element of size `size` in *arr (holding n); 0 when out of memory. */
static int grow(clf_plot *p, void *arr, size_t n, size_t size)
{
    void **a = arr;
    void *na = realloc(*a, (n + 1) * size);
    if (!na) {
        p->oom = 1;
        return 0;
    }
    *a = na;
    return 1;
}

static panel *current(clf_plot *p)
{
    if (p && !p->oom && p->np == 0) /* data before any panel: give them one */
        clf_plot_panel(p, 0, NULL, NULL, NULL);
    return p && !p->oom && p->np ? &p->p[p->np - 1] : NULL;
}

clf_plot *clf_plot_create(const char *title)
{
    clf_plot *p = calloc(1, sizeof *p);
    if (p && !(p->title = strdup(title ? title : ""))) {
        free(p);
        return NULL;
    }
    return p;
}

void clf_plot_destroy(clf_plot *p)
{
    if (!p)
        return;
    for (size_t i = 0; i < p->np; i++) {
        panel *q = &p->p[i];
        free(q->title);
        free(q->xlabel);
        free(q->ylabel);
        for (size_t j = 0; j < q->ns; j++) {
            free(q->s[j].name);
            free(q->s[j].x);
            free(q->s[j].y);
        }
        free(q->s);
        for (size_t j = 0; j < q->nb; j++)
            free(q->b[j].label);
        free(q->b);
        for (size_t j = 0; j < q->nrows; j++)
            free(q->rows[j]);
        free(q->rows);
        for (size_t j = 0; j < q->nk; j++)
            free(q->k[j].name);
        free(q->k);
    }
    free(p->p);
    free(p->title);
    free(p);
}

void clf_plot_panel(clf_plot *p, unsigned flags, const char *title, const char *xlabel,
                    const char *ylabel)
{
    if (!p || p->oom || !grow(p, &p->p, p->np, sizeof *p->p))
        return;
    panel *q = &p->p[p->np++];
    memset(q, 0, sizeof *q);
    q->flags = flags;
    q->title = dup_or_oom(p, title);
    q->xlabel = dup_or_oom(p, xlabel);
    q->ylabel = dup_or_oom(p, ylabel);
}

void clf_plot_line(clf_plot *p, const char *name, const double *x, const double *y, size_t n)
{
    panel *q = current(p);
    if (!q || !grow(p, &q->s, q->ns, sizeof *q->s))
        return;
    series *s = &q->s[q->ns];
    memset(s, 0, sizeof *s);
    s->name = dup_or_oom(p, name);
    s->x = malloc((n ? n : 1) * sizeof *s->x);
    s->y = malloc((n ? n : 1) * sizeof *s->y);
    q->ns++; /* counted even when incomplete, so that destroy frees what was made */
    if (!s->x || !s->y) {
        p->oom = 1;
        return;
    }
    memcpy(s->x, x, n * sizeof *x);
    memcpy(s->y, y, n * sizeof *y);
    s->n = n;
}

void clf_plot_bar(clf_plot *p, const char *row, double x0, double x1, unsigned color,
                  const char *label)
{
    panel *q = current(p);
    if (!q)
        return;
    size_t r = 0;
    while (r < q->nrows && strcmp(q->rows[r], row ? row : ""))
        r++;
    if (r == q->nrows) {
        if (!grow(p, &q->rows, q->nrows, sizeof *q->rows))
            return;
        if (!(q->rows[q->nrows] = dup_or_oom(p, row)))
            return;
        q->nrows++;
    }
    if (!grow(p, &q->b, q->nb, sizeof *q->b))
        return;
    bar *b = &q->b[q->nb++];
    b->row = r;
    b->x0 = x0;
    b->x1 = x1;
    b->color = color;
    b->label = label ? dup_or_oom(p, label) : NULL;
}

void clf_plot_key(clf_plot *p, unsigned color, const char *name)
{
    panel *q = current(p);
    if (!q || !grow(p, &q->k, q->nk, sizeof *q->k))
        return;
    q->k[q->nk].color = color;
    q->k[q->nk].name = dup_or_oom(p, name);
    q->nk++;
}

/* ---- axes --------------------------------------------------------------------------------- */

typedef struct axis {
    int log;      /* 0 linear, 10 or 2: log in that base */
    double lo, hi; /* in axis units: the value, or its logarithm */
    double step;  /* between ticks, in axis units */
    int bytes;    /* tick labels as sizes: 4K, 1M */
    int whole;    /* linear, whole numbers only: steps of 1 or more */
} axis;

static double to_axis(const axis *a, double v)
{
    return a->log == 10 ? log10(v) : a->log == 2 ? log2(v) : v;
}

/* Pixels from u (0..1 of the axis) over [p0, p1], kept finite and within a sane distance
 * of the chart: a point far outside its axis (see axis_fit()) lands at the edge of that. */
static double px(double u, double p0, double p1)
{
    double v = p0 + u * (p1 - p0);
    return isfinite(v) ? fmax(-1e5, fmin(1e5, v)) : p0;
}

static int usable(const axis *a, double v)
{
    return isfinite(v) && (!a->log || v > 0);
}

/* 1, 2 or 5 times a power of ten, the smallest at least v. */
static double nice_step(double v)
{
    double e = pow(10, floor(log10(v))), m = v / e;
    return (m <= 1 ? 1 : m <= 2 ? 2 : m <= 5 ? 5 : 10) * e;
}

static void axis_fit_range(axis *a, double lo, double hi, int from_zero);

/* The axis over [lo, hi] (data values; lo > hi: no data). Values so extreme that no tick
 * step can be found (a range that overflows, or one below the smallest double) give the
 * unit range instead: the chart is then wrong, but finite and drawn. */
static void axis_fit(axis *a, double lo, double hi, int from_zero)
{
    axis_fit_range(a, lo, hi, from_zero);
    if (!(a->step > 0) || !isfinite(a->step) || !isfinite(a->lo) || !isfinite(a->hi) ||
        !(a->hi > a->lo) || (a->hi - a->lo) / a->step > 1000) {
        a->lo = 0;
        a->hi = 1;
        a->step = a->log ? 1 : 0.2;
    }
}

static void axis_fit_range(axis *a, double lo, double hi, int from_zero)
{
    if (lo > hi) /* nothing to show: a unit range */
        lo = a->log ? 1 : 0, hi = a->log ? 10 : 1;
    if (a->log) {
        a->lo = floor(to_axis(a, lo));
        a->hi = ceil(to_axis(a, hi));
        if (a->hi <= a->lo)
            a->hi = a->lo + 1;
        /* At most about 9 ticks: every step-th power. */
        a->step = ceil((a->hi - a->lo) / 9);
        a->hi = a->lo + ceil((a->hi - a->lo) / a->step) * a->step;
        return;
    }
    if (from_zero && lo > 0)
        lo = 0;
    if (from_zero && hi < 0)
        hi = 0;
    if (hi - lo < 1e-12 * fmax(fabs(lo), fabs(hi)) || hi == lo) {
        double pad = lo != 0 ? fabs(lo) * 0.1 : 1;
        lo -= pad;
        hi += pad;
        if (from_zero && lo < 0 && hi > 0 && lo + pad >= 0)
            lo = 0;
    }
    a->step = nice_step((hi - lo) / 5);
    if (a->whole && a->step < 1)
        a->step = 1;
    a->lo = floor(lo / a->step) * a->step;
    a->hi = ceil(hi / a->step) * a->step;
}

/* The label of the tick at t (axis units). */
static void tick_label(const axis *a, double t, char *buf, size_t len)
{
    if (a->log && a->bytes) {
        static const char *const suffix[] = {"", "K", "M", "G", "T"};
        int e = (int)lround(t), k = e >= 0 ? e / 10 : 0;
        k = k > 4 ? 4 : k;
        snprintf(buf, len, "%.0f%s", pow(2, e - 10 * k), suffix[k]);
    } else if (a->log) {
        snprintf(buf, len, "%g", pow(a->log, t));
    } else {
        /* Round away the error of summing steps, and never write "-0". */
        double v = fabs(t) < a->step * 1e-9 ? 0 : t;
        snprintf(buf, len, "%.6g", v);
    }
}

/* ---- writing ------------------------------------------------------------------------------ */

/* Text with the XML specials escaped. */
static void put_text(FILE *f, const char *s)
{
    for (; s && *s; s++) {
        switch (*s) {
        case '&':
            fputs("&amp;", f);
            break;
        case '<':
            fputs("&lt;", f);
            break;
        case '>':
            fputs("&gt;", f);
            break;
        case '"':
            fputs("&quot;", f);
            break;
        default:
            if ((unsigned char)*s >= 0x20 || *s == '\t')
                fputc(*s, f);
        }
    }
}

static void text_at(FILE *f, double x, double y, const char *anchor, const char *attrs,
                    const char *s)
{
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"%s\"%s%s>", x, y, anchor,
            attrs ? " " : "", attrs ? attrs : "");
    put_text(f, s);
    fputs("</text>\n", f);
}

static double panel_height(const panel *q)
{
    double area = q->flags & CLF_PLOT_ROWS ? ROW_HEIGHT * (double)(q->nrows ? q->nrows : 1)
                                           : XY_HEIGHT;
    return PANEL_TOP + area + PANEL_BOTTOM;
}

/* The right margin: the legend column, as wide as its longest name (within limits). */
static double right_margin(const panel *q)
{
    size_t longest = 8;
    for (size_t i = 0; i < q->ns; i++)
        longest = strlen(q->s[i].name) > longest ? strlen(q->s[i].name) : longest;
    for (size_t i = 0; i < q->nk; i++)
        longest = strlen(q->k[i].name) > longest ? strlen(q->k[i].name) : longest;
    double m = 14 + 28 + CHAR_W * (double)longest + 8;
    return m > 300 ? 300 : m;
}

/* The left margin: room for the y tick labels, or for the row names. */
static double left_margin(const panel *q)
{
    if (!(q->flags & CLF_PLOT_ROWS))
        return 78;
    size_t longest = 4;
    for (size_t r = 0; r < q->nrows; r++)
        longest = strlen(q->rows[r]) > longest ? strlen(q->rows[r]) : longest;
    double m = 16 + CHAR_W * (double)longest;
    return m > 260 ? 260 : m;
}

static void legend_entry(FILE *f, double x, double y, unsigned color, int line, const char *name)
{
    const char *c = PALETTE[color % NPALETTE];
    if (line)
        fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" "
                   "stroke-width=\"2\"/><circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"%s\"/>\n",
                x, y - 4, x + 22, y - 4, c, x + 11, y - 4, c);
    else
        fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"14\" height=\"10\" fill=\"%s\"/>\n", x,
                y - 9, c);
    text_at(f, x + 28, y, "start", NULL, name);
}

/* Grid lines and tick labels of one axis of the plot area (x0, y0)-(x1, y1). */
static void draw_ticks(FILE *f, const axis *a, int vertical, double x0, double y0, double x1,
                       double y1)
{
    for (double t = a->lo; t <= a->hi + a->step * 1e-6; t += a->step) {
        char label[32];
        tick_label(a, t, label, sizeof label);
        double u = (t - a->lo) / (a->hi - a->lo);
        if (vertical) { /* x axis: vertical grid lines, labels below */
            double x = x0 + u * (x1 - x0);
            fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>\n",
                    x, y0, x, y1);
            text_at(f, x, y1 + 16, "middle", NULL, label);
        } else {
            double y = y1 - u * (y1 - y0);
            fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>\n",
                    x0, y, x1, y);
            text_at(f, x0 - 6, y + 4, "end", NULL, label);
        }
    }
}

static void draw_xy(FILE *f, const panel *q, double top, double right)
{
    double x0 = left_margin(q), x1 = WIDTH - right, y0 = top + PANEL_TOP,
           y1 = y0 + XY_HEIGHT;
    axis ax = {.log = q->flags & CLF_PLOT_LOG_X ? (q->flags & CLF_PLOT_X_BYTES ? 2 : 10) : 0,
               .bytes = !!(q->flags & CLF_PLOT_X_BYTES),
               .whole = !!(q->flags & CLF_PLOT_X_WHOLE)};
    axis ay = {.log = q->flags & CLF_PLOT_LOG_Y ? 10 : 0};
    double xlo = INFINITY, xhi = -INFINITY, ylo = INFINITY, yhi = -INFINITY;
    for (size_t i = 0; i < q->ns; i++)
        for (size_t j = 0; j < q->s[i].n; j++) {
            double x = q->s[i].x[j], y = q->s[i].y[j];
            if (!usable(&ax, x) || !usable(&ay, y))
                continue;
            xlo = fmin(xlo, x), xhi = fmax(xhi, x);
            ylo = fmin(ylo, y), yhi = fmax(yhi, y);
        }
    axis_fit(&ax, xlo, xhi, 0);
    axis_fit(&ay, ylo, yhi, !!(q->flags & CLF_PLOT_Y_ZERO));
    draw_ticks(f, &ax, 1, x0, y0, x1, y1);
    draw_ticks(f, &ay, 0, x0, y0, x1, y1);
    fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"none\" "
               "stroke=\"#444\"/>\n",
            x0, y0, x1 - x0, y1 - y0);
    text_at(f, (x0 + x1) / 2, y1 + 38, "middle", NULL, q->xlabel);
    char rot[96];
    snprintf(rot, sizeof rot, "transform=\"rotate(-90 %.1f %.1f)\"", x0 - 58, (y0 + y1) / 2);
    text_at(f, x0 - 58, (y0 + y1) / 2, "middle", rot, q->ylabel);
    for (size_t i = 0; i < q->ns; i++) {
        const series *s = &q->s[i];
        const char *c = PALETTE[i % NPALETTE];
        fputs("<g class=\"series\"><title>", f);
        put_text(f, s->name);
        fputs("</title>\n", f);
        /* One polyline per run of usable points: a gap in the data is a gap in the line. */
        int open = 0;
        for (size_t j = 0; j <= s->n; j++) {
            int ok = j < s->n && usable(&ax, s->x[j]) && usable(&ay, s->y[j]);
            if (ok && !open)
                fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\" points=\"", c);
            if (ok)
                fprintf(f, "%s%.1f,%.1f", open ? " " : "",
                        px((to_axis(&ax, s->x[j]) - ax.lo) / (ax.hi - ax.lo), x0, x1),
                        px((to_axis(&ay, s->y[j]) - ay.lo) / (ay.hi - ay.lo), y1, y0));
            if (!ok && open)
                fputs("\"/>\n", f);
            open = ok;
        }
        for (size_t j = 0; j < s->n; j++) {
            if (!usable(&ax, s->x[j]) || !usable(&ay, s->y[j]))
                continue;
            fprintf(f, "<circle class=\"point\" cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"%s\">"
                       "<title>%.6g, %.6g</title></circle>\n",
                    px((to_axis(&ax, s->x[j]) - ax.lo) / (ax.hi - ax.lo), x0, x1),
                    px((to_axis(&ay, s->y[j]) - ay.lo) / (ay.hi - ay.lo), y1, y0), c,
                    s->x[j], s->y[j]);
        }
        fputs("</g>\n", f);
        legend_entry(f, x1 + 14, y0 + 12 + 18 * (double)i, (unsigned)i, 1, s->name);
    }
}

static void draw_rows(FILE *f, const panel *q, double top, double right)
{
    double x0 = left_margin(q), x1 = WIDTH - right, y0 = top + PANEL_TOP,
           y1 = y0 + ROW_HEIGHT * (double)(q->nrows ? q->nrows : 1);
    axis ax = {0};
    double lo = INFINITY, hi = -INFINITY;
    for (size_t i = 0; i < q->nb; i++)
        if (isfinite(q->b[i].x0) && isfinite(q->b[i].x1)) {
            lo = fmin(lo, fmin(q->b[i].x0, q->b[i].x1));
            hi = fmax(hi, fmax(q->b[i].x0, q->b[i].x1));
        }
    axis_fit(&ax, lo, hi, 1);
    draw_ticks(f, &ax, 1, x0, y0, x1, y1);
    fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"none\" "
               "stroke=\"#444\"/>\n",
            x0, y0, x1 - x0, y1 - y0);
    text_at(f, (x0 + x1) / 2, y1 + 38, "middle", NULL, q->xlabel);
    for (size_t r = 0; r < q->nrows; r++)
        text_at(f, x0 - 6, y0 + ROW_HEIGHT * ((double)r + 0.5) + 4, "end", NULL, q->rows[r]);
    for (size_t i = 0; i < q->nb; i++) {
        const bar *b = &q->b[i];
        if (!isfinite(b->x0) || !isfinite(b->x1))
            continue;
        double a = px((fmin(b->x0, b->x1) - ax.lo) / (ax.hi - ax.lo), x0, x1);
        double w = px((fmax(b->x0, b->x1) - ax.lo) / (ax.hi - ax.lo), x0, x1) - a;
        double y = y0 + ROW_HEIGHT * (double)b->row + 3;
        fprintf(f, "<rect class=\"bar\" x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"%.1f\" "
                   "fill=\"%s\" stroke=\"white\" stroke-width=\"0.5\"><title>",
                a, y, w, ROW_HEIGHT - 6, PALETTE[b->color % NPALETTE]);
        put_text(f, q->rows[b->row]);
        fprintf(f, ": %.6g to %.6g", b->x0, b->x1);
        if (b->label) {
            fputs(" (", f);
            put_text(f, b->label);
            fputs(")", f);
        }
        fputs("</title></rect>\n", f);
        /* A label only where it fits: about 6.5 px per character at this size. */
        if (b->label && w > 6.5 * (double)strlen(b->label) + 6)
            text_at(f, a + w / 2, y + ROW_HEIGHT - 10, "middle", "fill=\"white\" font-size=\"11\"",
                    b->label);
    }
    for (size_t i = 0; i < q->nk; i++)
        legend_entry(f, x1 + 14, y0 + 12 + 18 * (double)i, q->k[i].color, 0, q->k[i].name);
}

static void write_svg(FILE *f, const clf_plot *p)
{
    double height = 40;
    for (size_t i = 0; i < p->np; i++)
        height += panel_height(&p->p[i]);
    fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
               "viewBox=\"0 0 %.0f %.0f\" font-family=\"sans-serif\" font-size=\"12\">\n",
            WIDTH, height, WIDTH, height);
    fputs("<title>", f);
    put_text(f, p->title);
    fputs("</title>\n", f);
    fputs("<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n", f);
    /* A long title gets a smaller font rather than running off the chart (bold 15 px: about
     * 10 px per character). */
    double size = 15, want = 10 * (double)strlen(p->title);
    if (want > WIDTH - 20)
        size = fmax(8, 15 * (WIDTH - 20) / want);
    char attrs[64];
    snprintf(attrs, sizeof attrs, "font-size=\"%.1f\" font-weight=\"bold\"", size);
    text_at(f, WIDTH / 2, 24, "middle", attrs, p->title);
    /* One legend column for every panel, so that the plot areas end at the same x. */
    double right = 0;
    for (size_t i = 0; i < p->np; i++)
        right = fmax(right, right_margin(&p->p[i]));
    double top = 40;
    for (size_t i = 0; i < p->np; i++) {
        const panel *q = &p->p[i];
        fputs("<g class=\"panel\">\n", f);
        text_at(f, left_margin(q), top + 20, "start", "font-weight=\"bold\"", q->title);
        if (q->flags & CLF_PLOT_ROWS)
            draw_rows(f, q, top, right);
        else
            draw_xy(f, q, top, right);
        fputs("</g>\n", f);
        top += panel_height(q);
    }
    fputs("</svg>\n", f);
}

int clf_plot_write(const clf_plot *p, const char *path)
{
    if (!p || p->oom) {
        errno = ENOMEM;
        return -1;
    }
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    /* Only this thread's locale changes, and only while writing (see the top). */
    locale_t c = newlocale(LC_ALL_MASK, "C", (locale_t)0);
    locale_t old = c ? uselocale(c) : (locale_t)0;
    if (!c) {
        fclose(f);
        errno = ENOMEM;
        return -1;
    }
    write_svg(f, p);
    uselocale(old);
    freelocale(c);
    int err = ferror(f) ? errno : 0;
    if (fclose(f) != 0 && !err)
        err = errno;
    if (err) {
        errno = err;
        return -1;
    }
    return 0;
}
