/*
 * Replacing the cost model's file atomically (see clf__perf_write_file() in perfmodel.h):
 * a temporary file in the same directory, fsync, rename, fsync of the directory, so that a
 * reader (another process opening its model) sees the old file or the new one, never a part.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* fsync, mkstemp, fchmod */
#endif

#include "perfmodel.h"
#include "util/util.h" /* clf__cache_default_dir */

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Lives in error.c; declared here so that this file needs no OpenCL header. */
clf_status clf__fail(clf_status s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static char *dup_str(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d)
        memcpy(d, s, n);
    return d;
}

/* Create the directories leading to path (mode 0700); -1 with errno on failure. */
static int make_parents(const char *path)
{
    char *d = dup_str(path);
    if (!d)
        return -1;
    int rc = 0;
    for (char *c = d + 1; *c; c++) {
        if (*c != '/')
            continue;
        *c = '\0';
        if (mkdir(d, 0700) != 0 && errno != EEXIST) {
            rc = -1;
            break;
        }
        *c = '/';
    }
    free(d);
    return rc;
}

clf_status clf__perf_write_file(const char *path, const char *buf, size_t len)
{
    clf_status st = CLF_SUCCESS;
    size_t n = strlen(path);
    char *tmp = NULL;
    int fd = -1;
    if (make_parents(path) != 0) {
        st = clf__fail(CLF_ERROR_IO, "perfmodel: cannot create the directory of '%s': %s", path,
                       strerror(errno));
        goto out;
    }
    tmp = malloc(n + 8);
    if (!tmp) {
        st = clf__fail(CLF_ERROR_OUT_OF_HOST_MEMORY, "perfmodel: out of memory");
        goto out;
    }
    memcpy(tmp, path, n);
    memcpy(tmp + n, ".XXXXXX", 8);
    /* mkstemp creates the file 0600 in the target's directory, so rename() is atomic. */
    fd = mkstemp(tmp);
    if (fd < 0) {
        st = clf__fail(CLF_ERROR_IO, "perfmodel: cannot create '%s': %s", tmp, strerror(errno));
        free(tmp);
        tmp = NULL;
        goto out;
    }
    /* The exact mode whatever the umask, as for the binary cache. */
    if (fchmod(fd, 0600) != 0) {
        st = clf__fail(CLF_ERROR_IO, "perfmodel: cannot chmod '%s': %s", tmp, strerror(errno));
        goto out;
    }
    for (size_t done = 0; done < len;) {
        ssize_t w = write(fd, buf + done, len - done);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            st = clf__fail(CLF_ERROR_IO, "perfmodel: cannot write '%s': %s", tmp,
                           strerror(w < 0 ? errno : EIO));
            goto out;
        }
        done += (size_t)w;
    }
    if (fsync(fd) != 0) {
        st = clf__fail(CLF_ERROR_IO, "perfmodel: cannot sync '%s': %s", tmp, strerror(errno));
        goto out;
    }
    int rc = close(fd);
    fd = -1;
    if (rc != 0 || rename(tmp, path) != 0) {
        st = clf__fail(CLF_ERROR_IO, "perfmodel: cannot replace '%s': %s", path, strerror(errno));
        goto out;
    }
    free(tmp);
    tmp = NULL;
    /* Make the rename itself durable; best effort, as some filesystems refuse it. */
    char *dir = dup_str(path);
    if (dir) {
        char *slash = strrchr(dir, '/');
        const char *name = ".";
        if (slash == dir) {
            name = "/";
        } else if (slash) {
            *slash = '\0';
            name = dir;
        }
        int dfd = open(name, O_RDONLY | O_DIRECTORY);
        if (dfd >= 0) {
            (void)fsync(dfd);
            close(dfd);
        }
        free(dir);
    }
out:
    if (fd >= 0)
        close(fd);
    if (tmp) {
        unlink(tmp);
        free(tmp);
    }
    return st;
}

/* ---- the model a cache directory holds (clfleet-info --perf-reset; --perf: perfmodel.c) ---- */

clf_status clf__perf_model_path(const char *cache_dir, const char *fn, char **path)
{
    char *dir = cache_dir ? NULL : clf__cache_default_dir();
    const char *d = cache_dir ? cache_dir : dir;
    if (!d)
        return clf__fail(CLF_ERROR_IO, "%s: no cache directory ($CLFLEET_CACHE_DIR, "
                         "$XDG_CACHE_HOME and $HOME are unset)", fn);
    size_t n = strlen(d) + sizeof "/" CLF__PERF_FILE;
    clf_status st = CLF_SUCCESS;
    if ((*path = malloc(n)) != NULL)
        snprintf(*path, n, "%s/%s", d, CLF__PERF_FILE);
    else
        st = clf__fail(CLF_ERROR_OUT_OF_HOST_MEMORY, "%s: out of memory", fn);
    free(dir);
    return st;
}

clf_status clf_perf_model_reset(const char *cache_dir)
{
    char *path = NULL;
    clf_status st = clf__perf_model_path(cache_dir, "clf_perf_model_reset", &path);
    if (st != CLF_SUCCESS)
        return st;
    if (unlink(path) != 0 && errno != ENOENT)
        st = clf__fail(CLF_ERROR_IO, "clf_perf_model_reset: cannot remove '%s': %s", path,
                       strerror(errno));
    free(path);
    return st;
}
