/*
 * What a failed build says: each device's note (the call's error and the compiler's log),
 * and the detail message that lists them, one copy per distinct log with every device that
 * shares it. Apart from program.c, which builds, because this is about telling, not building.
 */
#include "core.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Note why the build failed on fleet device dev: the call's error and the compiler's log. */
clf_status clf__program_set_log(clf_program *p, size_t dev, const char *what, const char *log)
{
    size_t n = strlen(what) + (log ? strlen(log) : 0) + 2;
    char *s = malloc(n);
    if (!s)
        return clf__fail(CLF_ERROR_OUT_OF_HOST_MEMORY, "build: out of memory");
    snprintf(s, n, "%s%s%s", what, log && log[0] ? "\n" : "", log ? log : "");
    free(p->log[dev]);
    p->log[dev] = s;
    return CLF_SUCCESS;
}

/* The driver's build log of one device (malloc'd; NULL when there is none). */
char *clf__program_driver_log(cl_program prog, cl_device_id id)
{
    size_t len = 0;
    char *log = NULL;
    if (clGetProgramBuildInfo(prog, id, CL_PROGRAM_BUILD_LOG, 0, NULL, &len) == CL_SUCCESS &&
        (log = calloc(len + 1, 1)) != NULL &&
        clGetProgramBuildInfo(prog, id, CL_PROGRAM_BUILD_LOG, len, log, NULL) != CL_SUCCESS)
        log[0] = '\0';
    return log;
}

static const char *log_of(const clf_program *p, size_t d)
{
    return p->log[d] ? p->log[d] : "(empty)";
}

/*
 * Two build logs that say the same: equal but for the file paths they name. A compiler
 * writes the source it was given to a temporary file of its own (PoCL:
 * ".../kcache/tempfile_ur5lpw.cl:2:9: use of undeclared identifier"), so two identical
 * devices' logs differ in that name only. A word with a '/' in both logs compares from its
 * first ':' on (the line and column), the rest exactly.
 */
static int logs_alike(const char *a, const char *b)
{
    while (*a && *b) {
        size_t ta = strcspn(a, " \t\n"), tb = strcspn(b, " \t\n");
        if (ta && tb && memchr(a, '/', ta) && memchr(b, '/', tb)) {
            const char *ca = memchr(a, ':', ta), *cb = memchr(b, ':', tb);
            size_t ra = ca ? ta - (size_t)(ca - a) : 0, rb = cb ? tb - (size_t)(cb - b) : 0;
            if (ra != rb || (ra && memcmp(ca, cb, ra)))
                return 0;
        } else if (ta != tb || memcmp(a, b, ta)) {
            return 0;
        }
        a += ta;
        b += tb;
        if (*a != *b) /* the same space, or both at the end */
            return 0;
        if (*a)
            a++, b++;
    }
    return *a == *b;
}

/* Device e is left out with the same log as device d. */
static int same_log(const clf_program *p, size_t d, size_t e)
{
    return !p->built[e] && logs_alike(log_of(p, d), log_of(p, e));
}

/*
 * Every left-out device's name and log, appended to the detail message; devices with the
 * same log share one copy ("devices 0-3 'name' (platform)"): four sub-devices of one CPU
 * fail alike, and four copies of a long compiler log hide the one line that matters.
 */
void clf__program_append_logs(const clf_program *p)
{
    const clf_fleet *fl = p->fleet;
    for (size_t d = 0; d < fl->ndev; d++) {
        if (p->built[d])
            continue;
        int first = 1; /* d is the first device of its log: print the group there */
        for (size_t e = 0; e < d && first; e++)
            first = !same_log(p, d, e);
        if (!first)
            continue;
        clf__sb ids = {0}, names = {0};
        size_t count = 0;
        for (size_t e = d; e < fl->ndev; e++) {
            if (!same_log(p, d, e))
                continue;
            count++;
            /* Ranges of consecutive indices: 0-3, 5. */
            int prev = e > d && same_log(p, d, e - 1);
            int next = e + 1 < fl->ndev && same_log(p, d, e + 1);
            if (!prev)
                clf__sb_printf(&ids, "%s%zu", ids.s ? ", " : "", e);
            else if (!next)
                clf__sb_printf(&ids, "-%zu", e);
            /* Each name and platform once, in order. */
            int named = 0;
            for (size_t g = d; g < e && !named; g++)
                named = same_log(p, d, g) &&
                        !strcmp(fl->dev[g].info.name, fl->dev[e].info.name) &&
                        !strcmp(fl->dev[g].info.platform, fl->dev[e].info.platform);
            if (!named)
                clf__sb_printf(&names, "%s'%s' (%s)", names.s ? ", " : "", fl->dev[e].info.name,
                               fl->dev[e].info.platform);
        }
        if (ids.oom || names.oom) /* the short form: no list */
            clf__append_error("\n--- device %zu '%s' (%s) build log ---\n%s", d,
                              fl->dev[d].info.name, fl->dev[d].info.platform, log_of(p, d));
        else
            clf__append_error("\n--- device%s %s %s build log ---\n%s", count > 1 ? "s" : "",
                              ids.s, names.s, log_of(p, d));
        free(ids.s);
        free(names.s);
    }
}
