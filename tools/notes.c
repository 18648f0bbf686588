/* The tools' log (see notes.h). */
#include "notes.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clfleet.h"

/* The library's notes of a slow first step say "can take seconds" (lib/core/program.c's
 * compile from source, lib/blas/gemmdev.c's first GEMM); tests/check-bench.sh checks that a
 * cold cache shows one. Other info messages (devices chosen, paths) stay quiet. */
static void handler(void *user, clf_log_level level, const char *msg)
{
    (void)user;
    if (level <= CLF_LOG_WARN || (level == CLF_LOG_INFO && strstr(msg, "can take seconds")))
        fprintf(stderr, "clfleet: %s\n", msg);
}

void clf_tool_show_slow_steps(void)
{
    /* CLFLEET_TOOL_NOTES marks a level set here, so that a tool's child processes (balance
     * runs one per configuration) filter the same way rather than taking it as the user's. */
    const char *v = getenv("CLFLEET_LOG"), *mine = getenv("CLFLEET_TOOL_NOTES");
    if (v && v[0] && !(mine && !strcmp(mine, "1") && !strcmp(v, "info")))
        return; /* the user's level, printed the library's way */
    if (setenv("CLFLEET_LOG", "info", 1) != 0 || setenv("CLFLEET_TOOL_NOTES", "1", 1) != 0)
        return;
    clf_log_set_handler(handler, NULL);
}
