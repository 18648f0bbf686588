/*
 * The charts of clfleet-bench's --plot FILE.svg: one small SVG writer (tools/plot.c) for every
 * benchmark that draws. A chart is panels stacked top to bottom; a panel is either an x-y
 * chart of lines with markers (linear or log axes, a legend) or a chart of rows (a category
 * per row, bars along x: shares, timelines). Plain SVG text, no dependency; numbers are
 * written in the C locale whatever LC_NUMERIC says, so the file is valid everywhere.
 *
 * The calls that add data never fail: running out of memory is remembered and reported by
 * clf_plot_write(), so a benchmark checks once, where it writes the file.
 */
#ifndef CLFLEET_TOOLS_PLOT_H
#define CLFLEET_TOOLS_PLOT_H

#include <stddef.h>

typedef struct clf_plot clf_plot;

/* Flags of clf_plot_panel(). */
enum {
    CLF_PLOT_LOG_X = 1u << 0,   /* x on a log scale (points with x <= 0 are left out) */
    CLF_PLOT_LOG_Y = 1u << 1,   /* y on a log scale (points with y <= 0 are left out) */
    CLF_PLOT_X_BYTES = 1u << 2, /* x is a size in bytes: ticks at powers of two, "4K", "1M" */
    CLF_PLOT_ROWS = 1u << 3,    /* a chart of rows with bars (clf_plot_bar()), not lines */
    CLF_PLOT_Y_ZERO = 1u << 4,  /* a linear y axis that starts at 0 (bandwidths, speedups) */
    CLF_PLOT_X_WHOLE = 1u << 5  /* a linear x axis of whole numbers: ticks 1 apart or more */
};

/* A new, empty chart titled `title`; NULL when out of memory (clf_plot_destroy(NULL) is fine). */
clf_plot *clf_plot_create(const char *title);
void clf_plot_destroy(clf_plot *p);

/* Start a panel below the others; later lines, bars and keys go into it. The labels name the
 * axes with their units ("size (bytes)", "GB/s"); a rows panel uses only xlabel. */
void clf_plot_panel(clf_plot *p, unsigned flags, const char *title, const char *xlabel,
                    const char *ylabel);

/* A line with a marker at every point of (x[i], y[i]), named in the legend. Points that are
 * not finite (or not positive on a log axis) are left out, and the line breaks there. */
void clf_plot_line(clf_plot *p, const char *name, const double *x, const double *y, size_t n);

/* Rows panel: a bar from x0 to x1 on the row named `row` (rows appear top to bottom in the
 * order first named), filled with colour `color` (an index into the palette, as the lines
 * use), with `label` inside when it fits (NULL: none). */
void clf_plot_bar(clf_plot *p, const char *row, double x0, double x1, unsigned color,
                  const char *label);

/* Rows panel: a legend entry for the bars of colour `color`. */
void clf_plot_key(clf_plot *p, unsigned color, const char *name);

/* Write the chart as SVG to `path`. Returns 0, or -1 with errno set (ENOMEM when an earlier
 * call ran out of memory, or the error of opening or writing the file). */
int clf_plot_write(const clf_plot *p, const char *path);

#endif
