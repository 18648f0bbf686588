/* The SVG writer of clfleet-bench --plot (tools/plot.c), without OpenCL: what a chart holds,
 * its axes, escaping, errors, and numbers under a decimal-comma locale. */
#include "plot.h"

#include <check.h>
#include <errno.h>
#include <locale.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char path[256];

static void make_path(void)
{
    const char *dir = getenv("TMPDIR");
    snprintf(path, sizeof path, "%s/clf-test-plot.%ld.svg", dir && *dir ? dir : "/tmp",
             (long)getpid());
}

/* The file at path, NUL-terminated (malloc'ed). */
static char *slurp(void)
{
    FILE *f = fopen(path, "r");
    ck_assert_ptr_nonnull(f);
    static char buf[1 << 20];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    unlink(path);
    return strdup(buf);
}

static size_t count(const char *s, const char *what)
{
    size_t n = 0;
    for (const char *p = strstr(s, what); p; p = strstr(p + 1, what))
        n++;
    return n;
}

/* No coordinate attribute holds a comma: "x=\"12,5\"" is what a decimal-comma printf gives. */
static int commas_in_coordinates(const char *s)
{
    static const char *const attrs[] = {" x=\"", " y=\"", " cx=\"", " cy=\"", " width=\"",
                                        " x1=\"", " y2=\""};
    for (size_t a = 0; a < sizeof attrs / sizeof attrs[0]; a++)
        for (const char *p = strstr(s, attrs[a]); p; p = strstr(p + 1, attrs[a])) {
            const char *v = p + strlen(attrs[a]);
            const char *end = strchr(v, '"');
            const char *comma = strchr(v, ',');
            if (end && comma && comma < end)
                return 1;
        }
    return 0;
}

/* A chart like p2p's: a log-x byte axis, a line with a gap (NaN) and a point at x = 0 that a
 * log axis cannot show; a rows panel with three bars on two rows. */
static char *sample(void)
{
    make_path();
    clf_plot *p = clf_plot_create("title <with> & \"specials\"");
    ck_assert_ptr_nonnull(p);
    double x[] = {4096, 65536, 1048576, 16777216, 0};
    double y[] = {0.5, NAN, 2.5, 10.25, 3};
    clf_plot_panel(p, CLF_PLOT_LOG_X | CLF_PLOT_X_BYTES | CLF_PLOT_Y_ZERO, "bandwidth",
                   "size (bytes)", "GB/s");
    clf_plot_line(p, "chosen", x, y, 5);
    clf_plot_line(p, "memcpy", x, y, 2);
    clf_plot_panel(p, CLF_PLOT_ROWS, "shares", "share", NULL);
    clf_plot_bar(p, "row one", 0, 0.25, 0, "0.25");
    clf_plot_bar(p, "row one", 0.25, 1, 1, "0.75");
    clf_plot_bar(p, "row two", 0, 1, 0, NULL);
    clf_plot_key(p, 0, "device 0");
    ck_assert_int_eq(clf_plot_write(p, path), 0);
    clf_plot_destroy(p);
    return slurp();
}

START_TEST(test_content)
{
    char *s = sample();
    ck_assert(strncmp(s, "<svg ", 5) == 0);
    ck_assert(strlen(s) > 7 && strcmp(s + strlen(s) - 7, "</svg>\n") == 0);
    ck_assert_uint_eq(count(s, "<g class=\"series\">"), 2);
    /* chosen: 3 of 5 points (NaN and x = 0 left out); memcpy: 1 of 2 (NaN). */
    ck_assert_uint_eq(count(s, "<circle class=\"point\""), 4);
    /* The gap breaks chosen's line in two; memcpy's single point makes a line of one. */
    ck_assert_uint_eq(count(s, "<polyline"), 3);
    ck_assert_uint_eq(count(s, "<rect class=\"bar\""), 3);
    ck_assert_uint_eq(count(s, "<g class=\"panel\">"), 2);
    ck_assert_uint_eq(count(s, "<g"), count(s, "</g>"));
    /* Powers of two as sizes, from 4K (the smallest point) up to 16M. */
    ck_assert_ptr_nonnull(strstr(s, ">4K</text>"));
    ck_assert_ptr_nonnull(strstr(s, ">16M</text>"));
    ck_assert_ptr_null(strstr(s, ">0K</text>"));
    /* Row names and the legend; labels only where they fit. */
    ck_assert_ptr_nonnull(strstr(s, ">row one</text>"));
    ck_assert_ptr_nonnull(strstr(s, ">device 0</text>"));
    ck_assert_ptr_nonnull(strstr(s, ">0.75</text>"));
    /* Text is escaped, never raw. */
    ck_assert_ptr_nonnull(strstr(s, "title &lt;with&gt; &amp; &quot;specials&quot;"));
    ck_assert_ptr_null(strstr(s, "<with>"));
    ck_assert(!commas_in_coordinates(s));
    free(s);
}
END_TEST

/* Whole-number axes tick at whole numbers; an empty panel still draws its axes. */
START_TEST(test_axes)
{
    make_path();
    clf_plot *p = clf_plot_create("devices");
    double x[] = {1, 2}, y[] = {1, 1.9};
    clf_plot_panel(p, CLF_PLOT_X_WHOLE | CLF_PLOT_Y_ZERO, "speedup", "devices", "x");
    clf_plot_line(p, "static", x, y, 2);
    clf_plot_panel(p, CLF_PLOT_LOG_Y, "empty", "x", "y");
    ck_assert_int_eq(clf_plot_write(p, path), 0);
    clf_plot_destroy(p);
    char *s = slurp();
    /* The x ticks (centred under the axis) are 1 and 2 only: 1.5 is no device count (the y
     * axis, labels anchored at their end, has 1.5). */
    ck_assert_ptr_nonnull(strstr(s, "text-anchor=\"middle\">1</text>"));
    ck_assert_ptr_nonnull(strstr(s, "text-anchor=\"middle\">2</text>"));
    ck_assert_ptr_null(strstr(s, "text-anchor=\"middle\">1.5</text>"));
    ck_assert_ptr_nonnull(strstr(s, "text-anchor=\"end\">1.5</text>"));
    ck_assert_ptr_nonnull(strstr(s, ">empty</text>"));
    ck_assert_uint_eq(count(s, "<circle class=\"point\""), 2);
    free(s);
}
END_TEST

/* Extreme values still give a finite chart, with no "inf" or "nan" in it. */
START_TEST(test_extremes)
{
    make_path();
    clf_plot *p = clf_plot_create("extremes");
    double x[] = {-1.7e308, 1.7e308}, y[] = {4.9e-324, 9.9e-324};
    double same[] = {3, 3};
    clf_plot_panel(p, 0, "huge x, tiny y", "x", "y");
    clf_plot_line(p, "a", x, y, 2);
    clf_plot_panel(p, CLF_PLOT_LOG_Y, "flat", "x", "y");
    clf_plot_line(p, "b", same, same, 2);
    clf_plot_panel(p, CLF_PLOT_ROWS, "rows", "t", NULL);
    clf_plot_bar(p, "r", INFINITY, 1, 0, NULL);
    clf_plot_bar(p, "r", 2, 2, 0, "empty");
    ck_assert_int_eq(clf_plot_write(p, path), 0);
    clf_plot_destroy(p);
    char *s = slurp();
    ck_assert_ptr_null(strstr(s, "inf"));
    ck_assert_ptr_null(strstr(s, "nan"));
    ck_assert_uint_eq(count(s, "<circle class=\"point\""), 4);
    ck_assert_uint_eq(count(s, "<rect class=\"bar\""), 1); /* the infinite one is left out */
    free(s);
}
END_TEST

START_TEST(test_errors)
{
    clf_plot *p = clf_plot_create("x");
    errno = 0;
    ck_assert_int_eq(clf_plot_write(p, "/nonexistent-dir/for/sure/plot.svg"), -1);
    ck_assert_int_eq(errno, ENOENT);
    clf_plot_destroy(p);
    errno = 0;
    ck_assert_int_eq(clf_plot_write(NULL, "/tmp/never.svg"), -1);
    ck_assert_int_eq(errno, ENOMEM);
    clf_plot_destroy(NULL);
    /* Data on a NULL chart are ignored, not a crash. */
    clf_plot_line(NULL, "a", NULL, NULL, 0);
    clf_plot_bar(NULL, "a", 0, 1, 0, NULL);
}
END_TEST

/* Under a decimal-comma LC_NUMERIC, printf("%.1f") writes "12,5": the writer must not. Such
 * a locale must be installed (or made by localedef and found through LOCPATH); without one
 * the test says so and checks the output in the C locale. */
START_TEST(test_locale)
{
    static const char *const names[] = {"de_DE.UTF-8", "de_DE.utf8", "fr_FR.UTF-8",
                                        "fr_FR.utf8", "nl_NL.UTF-8", "ru_RU.UTF-8"};
    const char *got = NULL;
    for (size_t i = 0; i < sizeof names / sizeof names[0] && !got; i++)
        got = setlocale(LC_NUMERIC, names[i]);
    if (!got) {
        fprintf(stderr, "test_plot: no decimal-comma locale installed: the writer's output is "
                        "checked in the C locale only\n");
    } else {
        char probe[16];
        snprintf(probe, sizeof probe, "%.1f", 1.5);
        ck_assert_str_eq(probe, "1,5"); /* the locale really is a decimal-comma one */
    }
    char *s = sample();
    setlocale(LC_NUMERIC, "C");
    ck_assert(!commas_in_coordinates(s));
    ck_assert_ptr_nonnull(strstr(s, "<title>4096, 0.5</title>"));
    free(s);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("plot");
    TCase *tc = tcase_create("svg");
    tcase_add_test(tc, test_content);
    tcase_add_test(tc, test_axes);
    tcase_add_test(tc, test_extremes);
    tcase_add_test(tc, test_errors);
    tcase_add_test(tc, test_locale);
    suite_add_tcase(s, tc);
    SRunner *r = srunner_create(s);
    srunner_run_all(r, CK_NORMAL);
    int failed = srunner_ntests_failed(r);
    srunner_free(r);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
