/*
 * The files a program's #include directives bring into its build, as one digest for the
 * binary cache key (program.c). Without it a cached binary would outlive a change to a
 * header the source includes, and the next process would run the old code with success.
 *
 * The search mirrors the compiler's without trying to equal it: every directory the compiler
 * may look in (the includer's own for a quoted name, the -I, -iquote, -isystem and
 * -idirafter directories of the options, CLFLEET_KERNEL_DIR, and the working directory,
 * against which an in-memory source's quoted includes and relative -I paths resolve) is
 * tried, and every file found is hashed (path and content) and followed. Hashing files the
 * compiler does not read only costs a rebuild when they change; missing one it reads would
 * be a wrong answer. A name found nowhere is keyed by itself: the compiler then fails, or
 * finds a header of its own, which the driver version in the key covers. Directives are
 * followed whatever the conditions around them, for the same reason.
 *
 * An include that cannot be followed (a name made by a macro, an unreadable file, too many
 * files or too deep a chain) makes the program uncacheable rather than keyed by a guess.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* realpath, strndup under -std=c11 */
#endif
#include "core.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define INC_MAX_DEPTH 32
#define INC_MAX_FILES 512
#define INC_MAX_DIRS 64

typedef struct inc_walk {
    clf__sha256 h;
    const char *dirs[INC_MAX_DIRS]; /* the options' directories, CLFLEET_KERNEL_DIR, "." */
    size_t ndirs;
    char *opts;                     /* a copy of the options the dirs point into */
    char **seen;                    /* real paths already hashed and followed */
    size_t nseen, files;
    char *why;                      /* set when the includes cannot be followed */
    size_t whylen;
} inc_walk;

/* Give up on the includes, saying why (the first reason is kept). */
static void give_up(inc_walk *w, const char *fmt, const char *arg)
{
    if (w->why[0])
        return;
    snprintf(w->why, w->whylen, fmt, arg);
}

static void hash_str(inc_walk *w, const char *tag, const char *s)
{
    clf__sha256_update(&w->h, tag, strlen(tag) + 1);
    clf__sha256_update(&w->h, s, strlen(s) + 1);
}

/* 1 when the real path was seen before; else notes it (0). -1 when out of memory. */
static int seen_before(inc_walk *w, const char *real)
{
    for (size_t i = 0; i < w->nseen; i++)
        if (!strcmp(w->seen[i], real))
            return 1;
    char **v = realloc(w->seen, (w->nseen + 1) * sizeof *v);
    if (!v)
        return -1;
    w->seen = v;
    if (!(v[w->nseen] = strdup(real)))
        return -1;
    w->nseen++;
    return 0;
}

static void walk_source(inc_walk *w, const char *src, const char *dir, unsigned depth);

/* The whole file at path, NUL-terminated (malloc'd), its length in *len; NULL when it cannot
 * be read. Not clf__read_file() (program.c): that file calls this one. */
static char *read_text(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    char *buf = NULL;
    size_t n = 0, cap = 0;
    for (;;) {
        if (cap - n < 4096) {
            char *b = cap < ((size_t)1 << 30) ? realloc(buf, cap + 65536) : NULL;
            if (!b)
                break;
            buf = b;
            cap += 65536;
        }
        size_t got = fread(buf + n, 1, cap - n - 1, f);
        n += got;
        if (got == 0) {
            if (ferror(f))
                break;
            fclose(f);
            buf[n] = '\0';
            *len = n;
            return buf;
        }
    }
    free(buf);
    fclose(f);
    return NULL;
}

/* Hash path when it names a file, and follow its includes; nothing when there is none. */
static void try_file(inc_walk *w, const char *path, unsigned depth)
{
    struct stat sb;
    if (stat(path, &sb) != 0) {
        if (errno != ENOENT && errno != ENOTDIR)
            give_up(w, "cannot look at '%.200s'", path);
        return; /* the compiler looks further */
    }
    if (S_ISDIR(sb.st_mode))
        return; /* the compiler skips a directory of that name too */
    char real[PATH_MAX];
    if (!realpath(path, real)) {
        give_up(w, "cannot resolve '%.200s'", path);
        return;
    }
    int seen = seen_before(w, real);
    if (seen < 0) {
        give_up(w, "out of memory%s", "");
        return;
    }
    hash_str(w, "file", path);
    if (seen)
        return; /* its content and includes are in the digest already */
    if (++w->files > INC_MAX_FILES) {
        give_up(w, "more than %s included files", "512");
        return;
    }
    size_t len = 0;
    char *text = read_text(path, &len);
    if (!text) {
        give_up(w, "cannot read '%.200s'", path);
        return;
    }
    unsigned char digest[32];
    clf__sha256 c;
    clf__sha256_init(&c);
    clf__sha256_update(&c, text, len);
    clf__sha256_final(&c, digest);
    clf__sha256_update(&w->h, digest, sizeof digest);
    /* The file's own directory comes first for its quoted includes. */
    char *slash = strrchr(path, '/');
    char *dir = slash ? strndup(path, (size_t)(slash - path) + (slash == path)) : strdup(".");
    if (!dir)
        give_up(w, "out of memory%s", "");
    else
        walk_source(w, text, dir, depth + 1);
    free(dir);
    free(text);
}

/* One directive's name (quoted: includer's directory dir first), in every directory. */
static void resolve(inc_walk *w, const char *name, int quoted, const char *dir, unsigned depth)
{
    hash_str(w, quoted ? "quoted" : "angled", name);
    if (depth >= INC_MAX_DEPTH) {
        give_up(w, "includes nested deeper than %s", "32");
        return;
    }
    if (name[0] == '/') {
        try_file(w, name, depth);
        return;
    }
    char path[PATH_MAX];
    for (size_t i = quoted ? 0 : 1; i <= w->ndirs && !w->why[0]; i++) {
        const char *d = i == 0 ? dir : w->dirs[i - 1];
        if ((size_t)snprintf(path, sizeof path, "%s/%s", d, name) >= sizeof path) {
            give_up(w, "include path too long: '%.200s'", name);
            return;
        }
        try_file(w, path, depth);
    }
}

/* After the '#' of a directive at s[i]: follow it when it is an include; i past the name. */
static size_t directive(inc_walk *w, const char *s, size_t i, const char *dir, unsigned depth)
{
    while (s[i] == ' ' || s[i] == '\t')
        i++;
    size_t b = i;
    while ((s[i] >= 'a' && s[i] <= 'z') || s[i] == '_')
        i++;
    size_t n = i - b;
    if (!((n == 7 && !strncmp(s + b, "include", 7)) ||
          (n == 12 && !strncmp(s + b, "include_next", 12)) ||
          (n == 6 && !strncmp(s + b, "import", 6))))
        return i;
    while (s[i] == ' ' || s[i] == '\t')
        i++;
    char close = s[i] == '"' ? '"' : s[i] == '<' ? '>' : '\0';
    size_t nb = i + 1, ne = nb;
    while (close && s[ne] && s[ne] != close && s[ne] != '\n')
        ne++;
    if (!close || s[ne] != close || ne == nb) {
        char line[80];
        size_t e = i;
        while (s[e] && s[e] != '\n' && e - b < sizeof line - 1)
            e++;
        snprintf(line, sizeof line, "%.*s", (int)(e - b), s + b);
        give_up(w, "'#%s' names no file clfleet can look for (a macro?)", line);
        return i;
    }
    char *name = strndup(s + nb, ne - nb);
    if (!name) {
        give_up(w, "out of memory%s", "");
        return ne;
    }
    resolve(w, name, close == '"', dir, depth);
    free(name);
    return ne + 1;
}

/* Follow every #include of src, whose quoted names are looked up in dir first. */
static void walk_source(inc_walk *w, const char *s, const char *dir, unsigned depth)
{
    size_t i = 0;
    int bol = 1; /* only blanks (or comments) since the line's start: '#' starts a directive */
    while (s[i] && !w->why[0]) {
        char c = s[i], c1 = s[i + 1];
        if (c == '\n') {
            bol = 1;
            i++;
        } else if (c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v') {
            i++;
        } else if (c == '\\' && c1 == '\n') {
            i += 2;
        } else if (c == '/' && c1 == '/') {
            while (s[i] && s[i] != '\n')
                i++;
        } else if (c == '/' && c1 == '*') {
            const char *e = strstr(s + i + 2, "*/");
            i = e ? (size_t)(e - s) + 2 : strlen(s);
        } else if (c == '#' && bol) {
            i = directive(w, s, i + 1, dir, depth);
            bol = 0;
            while (s[i] && s[i] != '\n') /* the rest of the directive's line */
                i += s[i] == '\\' && s[i + 1] == '\n' ? 2 : 1;
        } else if (c == '"' || c == '\'') {
            bol = 0;
            for (i++; s[i] && s[i] != c && s[i] != '\n'; i++)
                if (s[i] == '\\' && s[i + 1])
                    i++;
            if (s[i] == c)
                i++;
        } else {
            bol = 0;
            i++;
        }
    }
}

/* Whether src has an #include directive at all: most sources have none, and keep their key. */
static int has_include(const char *src)
{
    for (const char *p = strstr(src, "include"); p; p = strstr(p + 1, "include")) {
        const char *q = p;
        while (q > src && (q[-1] == ' ' || q[-1] == '\t'))
            q--;
        if (q > src && q[-1] == '#')
            return 1;
    }
    return 0;
}

/* The directories of the options' -I, -iquote, -isystem and -idirafter, in w->opts (a copy
 * cut into words, quotes removed), and the -include and -imacros files (hashed as quoted
 * includes of the working directory's source). */
static void option_dirs(inc_walk *w, const char *options, const char **files, size_t *nfiles)
{
    *nfiles = 0;
    if (!options || !(w->opts = strdup(options)))
        return;
    char *words[256];
    size_t nw = 0;
    for (char *p = w->opts, *o; *p && nw < CLF__ARRAY_LEN(words);) {
        while (*p == ' ' || *p == '\t' || *p == '\n')
            p++;
        if (!*p)
            break;
        words[nw++] = o = p;
        char q = '\0';
        for (; *p && (q || (*p != ' ' && *p != '\t' && *p != '\n')); p++) {
            if (!q && (*p == '"' || *p == '\''))
                q = *p;
            else if (q && *p == q)
                q = '\0';
            else
                *o++ = *p;
        }
        int end = *p == '\0';
        *o = '\0';
        if (!end)
            p++;
    }
    static const char *const dir_opts[] = {"-I", "-iquote", "-isystem", "-idirafter"};
    for (size_t i = 0; i < nw; i++) {
        const char *arg = NULL;
        int file = 0;
        if (!strcmp(words[i], "-include") || !strcmp(words[i], "-imacros")) {
            file = 1;
            arg = i + 1 < nw ? words[++i] : NULL;
        } else {
            for (size_t k = 0; k < CLF__ARRAY_LEN(dir_opts) && !arg; k++) {
                size_t l = strlen(dir_opts[k]);
                if (!strncmp(words[i], dir_opts[k], l))
                    arg = words[i][l] ? words[i] + l : i + 1 < nw ? words[++i] : NULL;
            }
        }
        if (!arg || !arg[0])
            continue;
        if (file && *nfiles < INC_MAX_DIRS)
            files[(*nfiles)++] = arg;
        else if (!file && w->ndirs < INC_MAX_DIRS - 2)
            w->dirs[w->ndirs++] = arg;
    }
}

int clf__include_digest(const char *source, const char *options, char hex[65], char *why,
                        size_t whylen)
{
    hex[0] = '\0';
    why[0] = '\0';
    const char *files[INC_MAX_DIRS];
    size_t nfiles = 0;
    int forced = options && (strstr(options, "-include") || strstr(options, "-imacros"));
    if (!has_include(source) && !forced)
        return 0;
    inc_walk w = {.why = why, .whylen = whylen};
    clf__sha256_init(&w.h);
    option_dirs(&w, options, files, &nfiles);
    if (options && !w.opts)
        give_up(&w, "out of memory%s", "");
    const char *kdir = getenv("CLFLEET_KERNEL_DIR");
    if (kdir && kdir[0])
        w.dirs[w.ndirs++] = kdir;
    w.dirs[w.ndirs++] = ".";
    for (size_t i = 0; i < nfiles && !why[0]; i++)
        resolve(&w, files[i], 1, ".", 0);
    if (!why[0])
        walk_source(&w, source, ".", 0);
    unsigned char digest[32];
    clf__sha256_final(&w.h, digest);
    clf__sha256_hex(digest, hex);
    for (size_t i = 0; i < w.nseen; i++)
        free(w.seen[i]);
    free(w.seen);
    free(w.opts);
    if (why[0]) {
        hex[0] = '\0';
        return -1;
    }
    return 1;
}
