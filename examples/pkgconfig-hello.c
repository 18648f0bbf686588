/* Built out of tree in CI against the installed library:
 *   cc pkgconfig-hello.c $(pkg-config --cflags --libs clfleet)
 * Creates the default fleet, round-trips a buffer on every device, builds a shipped kernel. */
#include <stdio.h>
#include <string.h>

#include <clfleet.h>

int main(void)
{
    clf_fleet *f;
    clf_status st = clf_fleet_create(&f, NULL);
    if (st != CLF_SUCCESS) {
        fprintf(stderr, "clf_fleet_create: %s: %s\n", clf_status_name(st), clf_last_error());
        return 1;
    }
    int rc = 0;
    char in[4096], out[4096];
    for (size_t i = 0; i < sizeof in; i++)
        in[i] = (char)(i * 7);
    for (size_t d = 0; d < clf_fleet_device_count(f) && rc == 0; d++) {
        clf_buffer *b;
        memset(out, 0, sizeof out);
        rc = clf_buffer_create(&b, f, d, sizeof in, 0) || clf_buffer_write(b, 0, sizeof in, in) ||
             clf_buffer_read(b, 0, sizeof out, out) || memcmp(in, out, sizeof in) != 0;
        clf_buffer_destroy(b);
    }
    clf_program *p = NULL;
    rc = rc || clf_program_build_shipped(&p, f, "vector", NULL) != CLF_SUCCESS;
    printf("clfleet %s: %zu device(s): %s\n", clf_version_string(), clf_fleet_device_count(f),
           rc ? "FAILED" : "ok");
    if (rc)
        fprintf(stderr, "%s\n", clf_last_error());
    clf_program_destroy(p);
    clf_fleet_destroy(f);
    return rc;
}
