/*
 * The hidden range parameter: how get_global_size() and get_num_groups() return the whole
 * range's sizes in every chunk of a launch (cl/clfleet.h says why they would not), in
 * kernels and in every function they call.
 *
 * OpenCL 1.2 has no program-scope variable the host can set, and rebuilding a program per
 * range size would cost a build per launch. So when a program's source (a macro's text
 * included) names either built-in, or get_global_linear_id() (OpenCL C 2.0: it needs them),
 * or includes a file (which might), the source is rewritten before the build: every kernel
 * function gets a trailing parameter `const ulong4 clfleet_global_size_only_in_kernels` (the
 * range's sizes, 1 past its dimensions), and the prelude's macros read it. Helper functions
 * that use the built-ins, directly or through the functions and macros they call, get the
 * same parameter, and every call of them passes it on (thread_helpers() below says why this
 * design). Whoever creates a kernel of a user program sets it (clf__program_set_range()).
 * The rewrite only inserts text within lines, so the user's line numbers stay right.
 *
 * Functions are found by a small tokenizer that skips comments, string and character
 * literals, preprocessor lines and __attribute__((...)); a function made by a macro or
 * defined in an included file is not found and gets no parameter (a helper there that calls
 * the built-ins fails to build, naming the parameter: program.c's hint says why). A kernel
 * whose name alone is a macro gets it under the macro's name: program.c learns its real
 * name from the driver after the build (range_kernels_from_driver()). Where the source
 * names the built-ins, a launch that splits a kernel the scan did not find into chunks is
 * refused (exec/check.c): it could not be given the sizes.
 */
#include "core.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HIDDEN_DECL "const ulong4 " CLF__RANGE_ARG_NAME

typedef struct lexer {
    const char *s;
    size_t i, n;
    int bol;     /* only blanks since the start of the line: a '#' starts a directive */
    int include; /* an #include directive was seen */
    /* A directive (a macro's text) names a built-in: CLF__NAMES_* bits. */
    int directive_names;
} lexer;

/* Whether [b, e) of s holds word (a crude look: a directive that names it in a comment only
 * costs a rewrite, which changes nothing). */
static int span_has(const char *s, size_t b, size_t e, const char *word)
{
    size_t w = strlen(word);
    for (size_t i = b; i + w <= e; i++)
        if (!strncmp(s + i, word, w))
            return 1;
    return 0;
}

enum { TOK_END = 0, TOK_IDENT = 256, TOK_NUMBER, TOK_LITERAL };

/* Skip to the end of the line (not past it), honouring backslash continuations. */
static void skip_line(lexer *x)
{
    while (x->i < x->n && x->s[x->i] != '\n') {
        if (x->s[x->i] == '\\' && x->i + 1 < x->n && x->s[x->i + 1] == '\n')
            x->i++;
        x->i++;
    }
}

/* The next token: its kind (TOK_* or the punctuation character), start and length. */
static int next_tok(lexer *x, size_t *start, size_t *len)
{
    const char *s = x->s;
    for (;;) {
        if (x->i >= x->n)
            return TOK_END;
        char c = s[x->i];
        char c1 = x->i + 1 < x->n ? s[x->i + 1] : '\0';
        if (c == '\n') {
            x->bol = 1;
            x->i++;
        } else if (c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v') {
            x->i++;
        } else if (c == '\\' && c1 == '\n') {
            x->i += 2;
        } else if (c == '/' && c1 == '/') {
            skip_line(x);
        } else if (c == '/' && c1 == '*') {
            const char *e = x->i + 2 < x->n ? strstr(s + x->i + 2, "*/") : NULL;
            x->i = e ? (size_t)(e - s) + 2 : x->n;
        } else if (c == '#' && x->bol) {
            size_t j = x->i + 1;
            while (j < x->n && (s[j] == ' ' || s[j] == '\t'))
                j++;
            if (x->n - j >= 7 && !strncmp(s + j, "include", 7))
                x->include = 1;
            skip_line(x);
            if (span_has(s, j, x->i, "get_global_size") || span_has(s, j, x->i, "get_num_groups"))
                x->directive_names |= CLF__NAMES_SIZES;
            if (span_has(s, j, x->i, "get_group_id") || span_has(s, j, x->i, "get_global_offset"))
                x->directive_names |= CLF__NAMES_OFFSETS;
            if (span_has(s, j, x->i, "get_global_linear_id"))
                x->directive_names |= CLF__NAMES_SIZES | CLF__NAMES_OFFSETS;
        } else {
            break;
        }
    }
    x->bol = 0;
    size_t b = x->i;
    char c = x->s[b];
    int kind;
    if (c == '"' || c == '\'') {
        x->i++;
        while (x->i < x->n && s[x->i] != c && s[x->i] != '\n')
            x->i += s[x->i] == '\\' && x->i + 1 < x->n ? 2 : 1;
        if (x->i < x->n && s[x->i] == c)
            x->i++;
        kind = TOK_LITERAL;
    } else if (isalpha((unsigned char)c) || c == '_') {
        while (x->i < x->n && (isalnum((unsigned char)s[x->i]) || s[x->i] == '_'))
            x->i++;
        kind = TOK_IDENT;
    } else if (isdigit((unsigned char)c)) {
        while (x->i < x->n && (isalnum((unsigned char)s[x->i]) || s[x->i] == '_' ||
                               s[x->i] == '.'))
            x->i++;
        kind = TOK_NUMBER;
    } else {
        x->i++;
        kind = (unsigned char)c;
    }
    *start = b;
    *len = x->i - b;
    return kind;
}

static int tok_is(const lexer *x, size_t start, size_t len, const char *word)
{
    return strlen(word) == len && !strncmp(x->s + start, word, len);
}

/* Skip a balanced parenthesised group whose '(' was just read; 0 at the end of the text. */
static int skip_group(lexer *x)
{
    size_t b, l;
    int depth = 1, t;
    while ((t = next_tok(x, &b, &l)) != TOK_END) {
        depth += t == '(' ? 1 : t == ')' ? -1 : 0;
        if (depth == 0)
            return 1;
    }
    return 0;
}

/* One edit of the source: replace [from, to) with text. */
typedef struct vedit {
    size_t from, to;
    char *text; /* malloc'd */
    size_t seq; /* the order it was added in: edits at one place keep it */
} vedit;

static int vedit_cmp(const void *a, const void *b)
{
    const vedit *x = a, *y = b;
    return x->from != y->from ? (x->from < y->from ? -1 : 1)
           : x->seq != y->seq ? (x->seq < y->seq ? -1 : 1)
                              : 0;
}

static clf_status vedit_add(vedit **v, size_t *n, size_t from, size_t to, char *text)
{
    if (!text)
        return CLF_ERROR_OUT_OF_HOST_MEMORY;
    vedit *e = realloc(*v, (*n + 1) * sizeof *e);
    if (!e) {
        free(text);
        return CLF_ERROR_OUT_OF_HOST_MEMORY;
    }
    *v = e;
    e[*n] = (vedit){from, to, text, *n};
    (*n)++;
    return CLF_SUCCESS;
}

static char *str_dup_n(const char *s, size_t n)
{
    char *r = malloc(n + 1);
    if (r) {
        memcpy(r, s, n);
        r[n] = '\0';
    }
    return r;
}

/* When st (the scan's status) is a success, the source (n bytes) with the edits (in any
 * order; none overlap) applied, in *out; st otherwise. Frees the edits' texts and the list
 * either way. */
static clf_status apply_edits(clf_status st, const char *src, size_t n, vedit *edits,
                              size_t nedits, char **out)
{
    size_t extra = 0;
    if (nedits > 1)
        qsort(edits, nedits, sizeof *edits, vedit_cmp);
    for (size_t e = 0; st == CLF_SUCCESS && e < nedits; e++)
        if (clf__add_overflow(extra, strlen(edits[e].text), &extra))
            st = CLF_ERROR_SIZE_OVERFLOW;
    char *s = st == CLF_SUCCESS ? malloc(n + extra + 1) : NULL;
    if (st == CLF_SUCCESS && !s)
        st = CLF_ERROR_OUT_OF_HOST_MEMORY;
    if (s) {
        size_t from = 0, o = 0;
        for (size_t e = 0; e < nedits; e++) {
            memcpy(s + o, src + from, edits[e].from - from);
            o += edits[e].from - from;
            size_t len = strlen(edits[e].text);
            memcpy(s + o, edits[e].text, len);
            o += len;
            from = edits[e].to;
        }
        memcpy(s + o, src + from, n - from + 1);
        *out = s;
    }
    for (size_t e = 0; e < nedits; e++)
        free(edits[e].text);
    free(edits);
    return st;
}

static clf_status add_name(char ***names, size_t *n, const char *s, size_t len)
{
    for (size_t i = 0; i < *n; i++)
        if (strlen((*names)[i]) == len && !strncmp((*names)[i], s, len))
            return CLF_SUCCESS; /* a declaration and its definition */
    char **v = realloc(*names, (*n + 1) * sizeof *v);
    if (!v)
        return CLF_ERROR_OUT_OF_HOST_MEMORY;
    *names = v;
    if (!(v[*n] = malloc(len + 1)))
        return CLF_ERROR_OUT_OF_HOST_MEMORY;
    memcpy(v[*n], s, len);
    v[(*n)++][len] = '\0';
    return CLF_SUCCESS;
}

/* Move x past the next `kernel` or `__kernel` keyword; 0 at the end of the source. */
static int next_kernel(lexer *x)
{
    size_t b, l;
    int t;
    while ((t = next_tok(x, &b, &l)) != TOK_END)
        if (t == TOK_IDENT && (tok_is(x, b, l, "kernel") || tok_is(x, b, l, "__kernel")))
            return 1;
    return 0;
}

/*
 * After `kernel`: skip attributes and the return type to the function's name and the '(' of
 * its parameter list (*name_b, *name_l: the name in x->s). 0 when the kernel keyword starts
 * no function, or one that the scan cannot follow.
 */
static int kernel_head(lexer *x, size_t *name_b, size_t *name_l)
{
    size_t b, l;
    int t;
    *name_b = *name_l = 0;
    while ((t = next_tok(x, &b, &l)) != TOK_END) {
        if (t == TOK_IDENT && tok_is(x, b, l, "__attribute__")) {
            if (next_tok(x, &b, &l) != '(' || !skip_group(x))
                return 0;
        } else if (t == TOK_IDENT) {
            *name_b = b;
            *name_l = l;
        } else if (t == '(' && *name_l) {
            return 1;
        } else if (t != '*') {
            return 0;
        }
    }
    return 0;
}

/* A token (t at [b, b + l)) of a parameter list: counts it in *ntok; *first_b is where the
 * first starts; *only_void says whether the list so far is the single word `void`. */
static void note_param_tok(const lexer *x, int t, size_t b, size_t l, size_t *ntok,
                           size_t *first_b, int *only_void)
{
    if ((*ntok)++ == 0) {
        *first_b = b;
        *only_void = t == TOK_IDENT && tok_is(x, b, l, "void");
    } else {
        *only_void = 0;
    }
}

/*
 * After `kernel`: find the function's name and parameter list, skipping attributes. Adds
 * the edit and the name; a kernel keyword that starts no function (or that the scan cannot
 * follow) adds nothing.
 */
static clf_status scan_kernel(lexer *x, vedit **edits, size_t *nedits, char ***names,
                              size_t *nnames)
{
    size_t b, l, name_b, name_l;
    int t;
    if (!kernel_head(x, &name_b, &name_l))
        return CLF_SUCCESS;
    /* The parameter list: empty, `void`, or parameters to append to. */
    size_t open = x->i, first_b = 0, ntok = 0;
    int depth = 1, only_void = 0;
    while (depth && (t = next_tok(x, &b, &l)) != TOK_END) {
        depth += t == '(' ? 1 : t == ')' ? -1 : 0;
        if (depth == 0)
            break;
        note_param_tok(x, t, b, l, &ntok, &first_b, &only_void);
    }
    if (t == TOK_END)
        return CLF_SUCCESS;
    clf_status st;
    if (ntok == 0 || only_void)
        st = vedit_add(edits, nedits, ntok ? first_b : open, ntok ? first_b + 4 : open,
                       str_dup_n(HIDDEN_DECL, strlen(HIDDEN_DECL)));
    else
        st = vedit_add(edits, nedits, b, b, str_dup_n(", " HIDDEN_DECL, strlen(", " HIDDEN_DECL)));
    if (st != CLF_SUCCESS)
        return st;
    return add_name(names, nnames, x->s + name_b, name_l);
}

/*
 * ---- helper functions: the parameter down the call graph ----
 *
 * A helper function (not a kernel) that calls get_global_size() or get_num_groups() (or
 * get_global_linear_id()) needs the range's sizes as much as a kernel does. Two designs
 * could give them: launch every chunk over the whole range and let the work-groups outside
 * the chunk return at once, or pass the hidden parameter down to the helpers that need it.
 * The first costs every chunk the empty groups of the whole range (with many chunks, most
 * of its groups: dynamic scheduling of 64 chunks launches 64 times the range) and changes
 * what get_global_id() and the chunk offsets mean; the second costs one ulong4 argument per
 * call, which OpenCL compilers inline away. So the parameter is threaded down: OpenCL C has
 * neither recursion nor function pointers, the call graph is static, and the source scan
 * below finds it.
 *
 * File scope is scanned for function definitions and prototypes (a name followed by a
 * parameter list, then a body or ';', outside initializers), and #define lines for macros.
 * A function needs the parameter when its body names a range built-in, a macro that needs
 * it, or calls a function that needs it; a macro when its replacement text does. Kernels
 * always have it. Each needing helper's definition and prototypes get the parameter, and
 * each call of one (in a function's body or in a macro's text) passes it along. Functions
 * that need nothing are left alone. Only insertions within lines: line numbers stay. A
 * function defined in an included file, or made by a macro, is not found.
 */
typedef struct fdecl {
    size_t name_b, name_l;
    size_t open;            /* just after the '(' of its parameter list */
    size_t close;           /* at its ')' */
    size_t first_b, ntok;   /* the parameter list's first token, its token count */
    int only_void;          /* the list is `void` */
    size_t body_b, body_e;  /* the body or the macro's text, [body_b, body_e); none: equal */
    int kernel, macro, needs;
} fdecl;

typedef struct fgraph {
    fdecl *f;
    size_t n;
    int oom;
} fgraph;

static fdecl *fgraph_add(fgraph *g)
{
    fdecl *v = realloc(g->f, (g->n + 1) * sizeof *v);
    if (!v) {
        g->oom = 1;
        return NULL;
    }
    g->f = v;
    memset(&v[g->n], 0, sizeof *v);
    return &v[g->n++];
}

static int is_size_builtin(const lexer *x, size_t b, size_t l)
{
    return tok_is(x, b, l, "get_global_size") || tok_is(x, b, l, "get_num_groups") ||
           tok_is(x, b, l, "get_global_linear_id");
}

/* The #define lines of src: each macro's name and replacement text (after its parameter
 * list when it has one), skipping comments and literals as next_tok() does. */
static void scan_defines(const char *src, size_t n, fgraph *g)
{
    int bol = 1;
    for (size_t i = 0; i < n && !g->oom; i++) {
        char c = src[i];
        if (c == '\n') {
            bol = 1;
            continue;
        }
        if (c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v')
            continue;
        if (c == '/' && i + 1 < n && src[i + 1] == '*') { /* a comment may span lines */
            const char *e = strstr(src + i + 2, "*/");
            i = e ? (size_t)(e - src) + 1 : n;
            continue;
        }
        if (c == '/' && i + 1 < n && src[i + 1] == '/') {
            while (i < n && src[i] != '\n')
                i += src[i] == '\\' && i + 1 < n && src[i + 1] == '\n' ? 2 : 1;
            i--;
            continue;
        }
        if (c == '"' || c == '\'') { /* a literal may hold a '#' or a comment's start */
            i++;
            while (i < n && src[i] != c && src[i] != '\n')
                i += src[i] == '\\' && i + 1 < n ? 2 : 1;
            bol = 0;
            continue;
        }
        if (c != '#' || !bol) {
            bol = 0;
            continue;
        }
        lexer y = {src, i, n, 0, 0, 0};
        skip_line(&y);
        size_t e = y.i, b, l; /* the directive's end (continuations included) */
        lexer x = {src, i + 1, e, 0, 0, 0};
        if (next_tok(&x, &b, &l) == TOK_IDENT && tok_is(&x, b, l, "define") &&
            next_tok(&x, &b, &l) == TOK_IDENT) {
            fdecl *m = fgraph_add(g);
            if (m) {
                m->macro = 1;
                m->name_b = b;
                m->name_l = l;
                if (x.i < e && src[x.i] == '(') { /* function-like: its parameters */
                    size_t pb, pl;
                    next_tok(&x, &pb, &pl);
                    skip_group(&x);
                }
                m->body_b = x.i;
                m->body_e = e;
            }
        }
        i = e ? e - 1 : 0;
        bol = 0;
    }
}

/* The functions defined or declared at file scope (src's first n bytes). */
static void scan_functions(const char *src, size_t n, fgraph *g)
{
    lexer x = {src, 0, n, 1, 0, 0};
    size_t b, l;
    int t, kern = 0, init = 0;
    while (!g->oom && (t = next_tok(&x, &b, &l)) != TOK_END) {
        if (t == ';') {
            kern = init = 0;
        } else if (t == '=') {
            init = 1;
        } else if (t == '{' || t == '(' || t == '[') { /* a struct, an initializer: skip */
            int depth = 1, o = t, c = t == '{' ? '}' : t == '(' ? ')' : ']';
            while (depth && (t = next_tok(&x, &b, &l)) != TOK_END)
                depth += t == o ? 1 : t == c ? -1 : 0;
        } else if (t == TOK_IDENT &&
                   (tok_is(&x, b, l, "kernel") || tok_is(&x, b, l, "__kernel"))) {
            kern = 1;
        } else if (t == TOK_IDENT && tok_is(&x, b, l, "__attribute__")) {
            size_t b2, l2;
            if (next_tok(&x, &b2, &l2) == '(')
                skip_group(&x);
        } else if (t == TOK_IDENT && !init) {
            lexer y = x;
            size_t b2, l2;
            if (next_tok(&y, &b2, &l2) != '(')
                continue;
            fdecl d = {b, l, y.i, 0, 0, 0, 0, 0, 0, kern, 0, 0};
            int depth = 1;
            while (depth && (t = next_tok(&y, &b2, &l2)) != TOK_END) {
                depth += t == '(' ? 1 : t == ')' ? -1 : 0;
                if (depth)
                    note_param_tok(&y, t, b2, l2, &d.ntok, &d.first_b, &d.only_void);
            }
            if (t == TOK_END)
                return;
            d.close = b2;
            lexer z = y;
            while ((t = next_tok(&z, &b2, &l2)) == TOK_IDENT && tok_is(&z, b2, l2, "__attribute__"))
                if (next_tok(&z, &b2, &l2) != '(' || !skip_group(&z))
                    break;
            if (t == '{') {
                d.body_b = z.i;
                depth = 1;
                while (depth && (t = next_tok(&z, &b2, &l2)) != TOK_END)
                    depth += t == '{' ? 1 : t == '}' ? -1 : 0;
                d.body_e = t == TOK_END ? z.n : b2;
                kern = init = 0;
            } else if (t != ';') {
                continue; /* not a function: a macro's use, say; go on after the name */
            }
            fdecl *f = fgraph_add(g);
            if (f)
                *f = d;
            x = z;
            if (t == ';')
                kern = init = 0;
        }
    }
}

/* Whether a call of (or a mention of the macro) name must pass the parameter. */
static int name_needs(const fgraph *g, const char *src, size_t b, size_t l, int macro,
                      int array)
{
    for (size_t i = 0; i < g->n; i++) {
        const fdecl *f = &g->f[i];
        if (f->macro == macro && f->name_l == l && !strncmp(src + f->name_b, src + b, l) &&
            (macro ? f->needs : f->kernel ? !array : f->needs))
            return 1;
    }
    return 0;
}

/*
 * Scan the body [b, e) of a function or macro: 1 when it needs the parameter. With edits,
 * also add the argument to every call in it of a function that needs it. In the array
 * variant (array), a kernel takes two hidden parameters: a call of a kernel is left alone.
 */
static int scan_body(const char *src, size_t b, size_t e, const fgraph *g, int array,
                     vedit **edits, size_t *nedits, clf_status *st)
{
    lexer x = {src, b, e, 0, 0, 0};
    size_t tb, tl;
    int t, needs = 0;
    while ((t = next_tok(&x, &tb, &tl)) != TOK_END) {
        if (t != TOK_IDENT)
            continue;
        if (is_size_builtin(&x, tb, tl) || name_needs(g, src, tb, tl, 1, array)) {
            needs = 1;
            continue;
        }
        lexer y = x;
        size_t b2, l2;
        if (next_tok(&y, &b2, &l2) != '(' || !name_needs(g, src, tb, tl, 0, array))
            continue;
        needs = 1;
        if (!edits)
            continue;
        /* The call's ')' and whether it has arguments; the arguments are scanned next. */
        size_t ntok = 0;
        int depth = 1;
        while (depth && (t = next_tok(&y, &b2, &l2)) != TOK_END) {
            depth += t == '(' ? 1 : t == ')' ? -1 : 0;
            ntok += depth != 0;
        }
        if (t == TOK_END || *st != CLF_SUCCESS)
            continue;
        const char *arg = ntok ? ", " CLF__RANGE_ARG_NAME : CLF__RANGE_ARG_NAME;
        *st = vedit_add(edits, nedits, b2, b2, str_dup_n(arg, strlen(arg)));
    }
    return needs;
}

/* Add to edits what the helpers need (see above). */
static clf_status thread_helpers(const char *src, size_t n, int array, vedit **edits,
                                 size_t *nedits)
{
    fgraph g = {NULL, 0, 0};
    scan_defines(src, n, &g);
    scan_functions(src, n, &g);
    clf_status st = g.oom ? CLF_ERROR_OUT_OF_HOST_MEMORY : CLF_SUCCESS;
    /* To the fixed point: each round adds at least one function or macro, or ends. */
    for (int changed = 1; changed && st == CLF_SUCCESS;) {
        changed = 0;
        for (size_t i = 0; i < g.n; i++) {
            fdecl *f = &g.f[i];
            if (f->needs || f->kernel || f->body_b == f->body_e)
                continue;
            if (scan_body(src, f->body_b, f->body_e, &g, array, NULL, NULL, &st)) {
                /* A definition: its prototypes share its name, hence its need. */
                for (size_t j = 0; j < g.n; j++)
                    if (g.f[j].macro == f->macro && g.f[j].name_l == f->name_l &&
                        !strncmp(src + g.f[j].name_b, src + f->name_b, f->name_l))
                        g.f[j].needs = 1;
                changed = 1;
            }
        }
    }
    for (size_t i = 0; i < g.n && st == CLF_SUCCESS; i++) {
        fdecl *f = &g.f[i];
        if (f->body_b != f->body_e && (f->needs || f->kernel))
            scan_body(src, f->body_b, f->body_e, &g, array, edits, nedits, &st);
        if (f->macro || f->kernel || !f->needs || st != CLF_SUCCESS)
            continue;
        if (f->ntok == 0 || f->only_void)
            st = vedit_add(edits, nedits, f->ntok ? f->first_b : f->open,
                           f->ntok ? f->first_b + 4 : f->open,
                           str_dup_n(HIDDEN_DECL, strlen(HIDDEN_DECL)));
        else
            st = vedit_add(edits, nedits, f->close, f->close,
                           str_dup_n(", " HIDDEN_DECL, strlen(", " HIDDEN_DECL)));
    }
    free(g.f);
    return st;
}

clf_status clf__range_rewrite(const char *src, char **out, char ***names, size_t *nnames,
                              int *named)
{
    *out = NULL;
    *names = NULL;
    *nnames = 0;
    *named = 0;
    lexer x = {src, 0, strlen(src), 1, 0, 0};
    size_t b, l;
    int t, uses = 0, offsets = 0;
    while ((t = next_tok(&x, &b, &l)) != TOK_END) {
        uses |= t == TOK_IDENT &&
                (tok_is(&x, b, l, "get_global_size") || tok_is(&x, b, l, "get_num_groups") ||
                 tok_is(&x, b, l, "get_global_linear_id"));
        offsets |= t == TOK_IDENT &&
                   (tok_is(&x, b, l, "get_group_id") || tok_is(&x, b, l, "get_global_offset") ||
                    tok_is(&x, b, l, "get_global_linear_id"));
    }
    /* A macro's text counts: `#define N get_global_size(0)` names it wherever N is used. */
    uses |= (x.directive_names & CLF__NAMES_SIZES) != 0;
    offsets |= (x.directive_names & CLF__NAMES_OFFSETS) != 0;
    *named = (uses ? CLF__NAMES_SIZES : 0) | (offsets || x.include ? CLF__NAMES_OFFSETS : 0);
    if (!uses && !x.include)
        return CLF_SUCCESS;
    vedit *edits = NULL;
    size_t nedits = 0;
    clf_status st = CLF_SUCCESS;
    x = (lexer){src, 0, strlen(src), 1, 0, 0};
    while (st == CLF_SUCCESS && next_kernel(&x))
        st = scan_kernel(&x, &edits, &nedits, names, nnames);
    if (st == CLF_SUCCESS)
        st = thread_helpers(src, x.n, 0, &edits, &nedits);
    st = apply_edits(st, src, x.n, edits, nedits, out);
    if (st != CLF_SUCCESS) {
        for (size_t i = 0; i < *nnames; i++)
            free((*names)[i]);
        free(*names);
        *names = NULL;
        *nnames = 0;
        return clf__fail(st, "program: out of memory rewriting the source");
    }
    return CLF_SUCCESS;
}

int clf__program_range_arg(const clf_program *p, const char *kernel)
{
    for (size_t i = 0; i < p->nrange_kernels; i++)
        if (!strcmp(p->range_kernels[i], kernel))
            return 1;
    return 0;
}

/* Only where the source itself names the built-ins: a kernel of an included file (not
 * found) that calls them fails to build, as the macros name a parameter it lacks. */
int clf__program_range_unknown(const clf_program *p, const char *kernel)
{
    return (p->range_named & CLF__NAMES_SIZES) && !clf__program_range_arg(p, kernel);
}

clf_status clf__program_set_range(const clf_program *p, const char *kernel, cl_kernel k,
                                  const size_t global[3], unsigned dims,
                                  const struct clf__device *d)
{
    if (!clf__program_range_arg(p, kernel))
        return CLF_SUCCESS;
    cl_uint n = 0;
    cl_int err = clGetKernelInfo(k, CL_KERNEL_NUM_ARGS, sizeof n, &n, NULL);
    if (err != CL_SUCCESS)
        return clf__cl_fail(err, "clGetKernelInfo (CL_KERNEL_NUM_ARGS)", d);
    if (n == 0)
        return clf__fail(CLF_ERROR_INVALID_ARGUMENT, "kernel '%s' lacks its range parameter",
                         kernel);
    cl_ulong4 g;
    for (unsigned i = 0; i < 4; i++)
        g.s[i] = i < dims && i < 3 ? (cl_ulong)global[i] : 1;
    err = clSetKernelArg(k, n - 1, sizeof g, &g);
    if (err != CL_SUCCESS)
        return clf__cl_fail(err, "clSetKernelArg (the range of get_global_size)", d);
    return CLF_SUCCESS;
}

/*
 * The array variant (clf_array_launch(), lib/data/alaunch.c). A part's buffer holds only
 * its units (and halo), yet the kernel indexes it with global indices. Every kernel gets
 * two hidden trailing parameters, `const ulong16 clfleet_part_offsets` then the range
 * parameter, and its body starts by moving each __global or __constant pointer parameter
 * (the i-th one reads .si) back to where global element 0 would be:
 *     P -= (long)clfleet_part_offsets.s3 / (long)sizeof(*P);
 * The offset is signed: a block-cyclic part that is not its buffer's first has its element
 * 0 after the buffer's start. The pointer may thus point outside its buffer, which OpenCL C
 * leaves undefined, but the kernel only dereferences it at the part's owned and halo
 * elements, inside the buffer; on PoCL, NVIDIA and AMD global pointers are flat 64-bit
 * addresses and the arithmetic is plain integer arithmetic, so the round trip is exact.
 */
#define PART_DECL "const ulong16 " CLF__PART_ARG_NAME
#define MAX_PART_PTRS CLF__PART_MAX_PTRS

/* Append piece to a malloc'd string (*s, NULL at first); 0 when out of memory. */
static int str_append(char **s, const char *piece)
{
    size_t old = *s ? strlen(*s) : 0, n = strlen(piece);
    char *r = realloc(*s, old + n + 1);
    if (!r)
        return 0;
    memcpy(r + old, piece, n + 1);
    *s = r;
    return 1;
}

/*
 * After `kernel` in the variant: add the hidden parameters and the rebasing statements.
 * One parameter at a time: its pointer-ness, address space, name, and a const after its
 * last '*' (a pointer that cannot be moved).
 */
static clf_status scan_kernel_array(lexer *x, vedit **edits, size_t *nedits, char ***names,
                                    size_t *nnames, char ***why, uint64_t **masks)
{
    size_t b, l, name_b, name_l;
    int t;
    if (!kernel_head(x, &name_b, &name_l))
        return CLF_SUCCESS;
    size_t open = x->i, first_b = 0, ntok = 0, nptr = 0, pidx = 0;
    uint64_t mask = 0; /* the parameters moved */
    int depth = 1, only_void = 0;
    /* The current parameter. */
    int star = 0, space = 0, const_after = 0;
    size_t pname_b = 0, pname_l = 0;
    char *rebase = NULL, *refuse = NULL;
    clf_status st = CLF_SUCCESS;
    for (;;) {
        t = next_tok(x, &b, &l);
        if (t == TOK_END)
            goto out;
        if (t == '(' || t == '[')
            depth++;
        if (t == ')' || t == ']')
            depth--;
        int end = depth == 0 || (depth == 1 && t == ',');
        if (end) {
            if (star && space && pname_l && !refuse) {
                char pn[128], piece[640];
                snprintf(pn, sizeof pn, "%.*s", (int)(pname_l < 100 ? pname_l : 100),
                         x->s + pname_b);
                if (const_after)
                    snprintf(piece, sizeof piece, "its pointer parameter '%s' is itself const "
                             "(`* const %s`): clfleet moves each __global or __constant "
                             "pointer to global element 0 of its part, drop that const", pn, pn);
                else if (nptr >= MAX_PART_PTRS)
                    snprintf(piece, sizeof piece, "it has more than %d __global or __constant "
                             "pointer parameters, clfleet can move at most %d to their parts",
                             MAX_PART_PTRS, MAX_PART_PTRS);
                else
                    snprintf(piece, sizeof piece, " %s -= (long)" CLF__PART_ARG_NAME
                             ".s%x / (long)sizeof(*%s);", pn, (unsigned)nptr, pn);
                if (!str_append(const_after || nptr >= MAX_PART_PTRS ? &refuse : &rebase, piece))
                    st = CLF_ERROR_OUT_OF_HOST_MEMORY;
                if (!const_after && nptr < MAX_PART_PTRS && pidx < 64)
                    mask |= (uint64_t)1 << pidx;
                nptr++;
            }
            pidx++;
            star = space = const_after = 0;
            pname_l = 0;
            if (st != CLF_SUCCESS || depth == 0)
                break;
            continue;
        }
        note_param_tok(x, t, b, l, &ntok, &first_b, &only_void);
        if (depth != 1)
            continue;
        if (t == '*') {
            star = 1;
            const_after = 0;
        } else if (t == TOK_IDENT) {
            if (tok_is(x, b, l, "__global") || tok_is(x, b, l, "global") ||
                tok_is(x, b, l, "__constant") || tok_is(x, b, l, "constant"))
                space = 1;
            else if (star && tok_is(x, b, l, "const"))
                const_after = 1;
            else if (!tok_is(x, b, l, "restrict") && !tok_is(x, b, l, "__restrict") &&
                     !tok_is(x, b, l, "volatile")) {
                pname_b = b;
                pname_l = l;
            }
        }
    }
    if (st != CLF_SUCCESS)
        goto out;
    size_t close = b;
    if (ntok == 0 || only_void)
        st = vedit_add(edits, nedits, ntok ? first_b : open, ntok ? first_b + 4 : open,
                       str_dup_n(PART_DECL ", " HIDDEN_DECL, strlen(PART_DECL ", " HIDDEN_DECL)));
    else
        st = vedit_add(edits, nedits, close, close,
                       str_dup_n(", " PART_DECL ", " HIDDEN_DECL,
                                 strlen(", " PART_DECL ", " HIDDEN_DECL)));
    if (st != CLF_SUCCESS)
        goto out;
    /* The body: after attributes, '{' (a declaration ends with ';'). */
    while ((t = next_tok(x, &b, &l)) == TOK_IDENT && tok_is(x, b, l, "__attribute__"))
        if (next_tok(x, &b, &l) != '(' || !skip_group(x))
            break;
    if (t == '{' && rebase && !refuse) {
        st = vedit_add(edits, nedits, x->i, x->i, rebase);
        rebase = NULL;
        if (st != CLF_SUCCESS)
            goto out;
    }
    size_t before = *nnames;
    if ((st = add_name(names, nnames, x->s + name_b, name_l)) != CLF_SUCCESS)
        goto out;
    if (*nnames != before) { /* a new kernel: why[] and masks[] grow with names[] */
        char **v = realloc(*why, *nnames * sizeof *v);
        if (v) {
            *why = v;
            v[*nnames - 1] = NULL;
        }
        uint64_t *m = v ? realloc(*masks, *nnames * sizeof *m) : NULL;
        if (!m) { /* the name goes again: why[] and masks[] cover the names */
            free((*names)[--*nnames]);
            st = CLF_ERROR_OUT_OF_HOST_MEMORY;
            goto out;
        }
        *masks = m;
        m[*nnames - 1] = mask;
    }
    for (size_t i = 0; i < *nnames; i++) {
        if (strlen((*names)[i]) != name_l || strncmp((*names)[i], x->s + name_b, name_l))
            continue;
        if (t == '{') /* the definition's parameters (a prototype's may have no names) */
            (*masks)[i] = mask;
        if (refuse && !(*why)[i]) {
            (*why)[i] = refuse;
            refuse = NULL;
        }
    }
out:
    free(rebase);
    free(refuse);
    return st;
}

clf_status clf__array_rewrite(const char *src, char **out, char ***names, size_t *nnames,
                              char ***why, uint64_t **masks)
{
    *out = NULL;
    *names = NULL;
    *nnames = 0;
    *why = NULL;
    *masks = NULL;
    lexer x = {src, 0, strlen(src), 1, 0, 0};
    vedit *edits = NULL;
    size_t nedits = 0;
    clf_status st = CLF_SUCCESS;
    while (st == CLF_SUCCESS && next_kernel(&x))
        st = scan_kernel_array(&x, &edits, &nedits, names, nnames, why, masks);
    if (st == CLF_SUCCESS)
        st = thread_helpers(src, x.n, 1, &edits, &nedits);
    st = apply_edits(st, src, x.n, edits, nedits, out);
    if (st != CLF_SUCCESS) {
        for (size_t i = 0; i < *nnames; i++) {
            free((*names)[i]);
            free(*why ? (*why)[i] : NULL);
        }
        free(*names);
        free(*why);
        free(*masks);
        *names = NULL;
        *why = NULL;
        *masks = NULL;
        *nnames = 0;
        return clf__fail(st, "program: out of memory rewriting the source for arrays");
    }
    return CLF_SUCCESS;
}

/*
 * ---- does a kernel store through a pointer parameter? ----
 *
 * A broadcast (CLF_BROADCAST) is one copy per device, kept between launches while the host
 * array is unchanged: sound only if no kernel writes the copy. A const or __constant
 * parameter promises that; for a plain `__global T *` one, much published code that only
 * reads it, this scan of the source decides. It is conservative: every mention of the
 * parameter must be a read it understands (an element `p[i]`, maybe with a member or
 * swizzle, not assigned, incremented or having its address taken; `*p` read; a whole
 * argument to vload*, prefetch or a helper function whose own parameter passes this test);
 * anything else is doubt. A store it recognises (an assignment, ++/--, atomic_*, vstore*)
 * is a sure store.
 */

/* Token i of a small window: kind, start, length. */
typedef struct tokw {
    int t;
    size_t b, l;
} tokw;

/* The next n tokens of x (a copy: x does not move). */
static void peek(const lexer *x, tokw *w, int n)
{
    lexer y = *x;
    for (int i = 0; i < n; i++) {
        w[i].t = next_tok(&y, &w[i].b, &w[i].l);
        if (w[i].t == TOK_END)
            w[i].b = y.n, w[i].l = 0;
    }
}

/* Whether w (the tokens after an lvalue) start an assignment, compound assignment, ++ or
 * --. Adjacent characters only: `a[i] - -b` is no decrement. */
static int assigns(const tokw *w)
{
    int adj1 = w[1].b == w[0].b + 1, adj2 = w[2].b == w[1].b + 1;
    if (w[0].t == '=')
        return !(w[1].t == '=' && adj1);
    if (w[0].t > 0 && w[0].t < 128 && strchr("+-*/%&|^", w[0].t) && w[1].t == '=' && adj1)
        return 1;
    if ((w[0].t == '+' || w[0].t == '-') && w[1].t == w[0].t && adj1)
        return 1;
    if ((w[0].t == '<' || w[0].t == '>') && w[1].t == w[0].t && adj1 && w[2].t == '=' && adj2)
        return 1;
    return 0;
}

static int starts_with(const lexer *x, size_t b, size_t l, const char *p)
{
    size_t n = strlen(p);
    return l >= n && !strncmp(x->s + b, p, n);
}

/* Parameter idx of function f: its name (the last identifier of its declaration, before
 * any `[`); 0 when it has none. */
static int param_name(const char *src, const fdecl *f, size_t idx, size_t *nb, size_t *nl)
{
    lexer x = {src, f->open, f->close, 0, 0, 0};
    size_t b, l, k = 0;
    int t, depth = 0;
    *nl = 0;
    while ((t = next_tok(&x, &b, &l)) != TOK_END) {
        if (t == '(' || t == '[')
            depth++;
        else if (t == ')' || t == ']')
            depth--;
        else if (t == ',' && depth == 0)
            k++;
        else if (t == TOK_IDENT && depth == 0 && k == idx)
            *nb = b, *nl = l;
    }
    return *nl != 0;
}

enum { STORE_NONE = 0, STORE_DOUBT = 1, STORE_SEEN = 2 };

static int body_stores(const char *src, const fgraph *g, const fdecl *f, size_t nb, size_t nl,
                       int depth);

/* A whole-argument mention of the pointer, argument arg of a call of callee. */
static int call_stores(const char *src, const fgraph *g, const lexer *x, size_t cb, size_t cl,
                       size_t arg, int depth)
{
    if (starts_with(x, cb, cl, "vload") || tok_is(x, cb, cl, "prefetch"))
        return STORE_NONE;
    if (starts_with(x, cb, cl, "vstore") || starts_with(x, cb, cl, "atomic_") ||
        starts_with(x, cb, cl, "atom_"))
        return STORE_SEEN;
    for (size_t i = 0; i < g->n; i++) {
        const fdecl *h = &g->f[i];
        if (h->macro || h->body_b == h->body_e || h->name_l != cl ||
            strncmp(src + h->name_b, src + cb, cl))
            continue;
        size_t pb, pl;
        if (depth > 16 || !param_name(src, h, arg, &pb, &pl))
            return STORE_DOUBT;
        return body_stores(src, g, h, pb, pl, depth + 1);
    }
    return STORE_DOUBT; /* a macro, an included function, a built-in not listed */
}

/* What function f's body does through its pointer parameter named src[nb, nb + nl). */
static int body_stores(const char *src, const fgraph *g, const fdecl *f, size_t nb, size_t nl,
                       int depth)
{
    enum { MAXNEST = 64 };
    struct {
        size_t cb, cl, arg; /* the callee before the '(' (cl 0: none), the argument index */
    } nest[MAXNEST];
    int top = -1, worst = STORE_NONE;
    lexer x = {src, f->body_b, f->body_e, 0, 0, 0};
    size_t b, l;
    int t, prev = 0, prev2 = 0;
    size_t prev_b = 0, prev_l = 0, prev_end = 0, prev2_end = 0;
    while (worst != STORE_SEEN && (t = next_tok(&x, &b, &l)) != TOK_END) {
        if (t == '(') {
            if (top + 1 >= MAXNEST)
                return STORE_DOUBT;
            top++;
            nest[top].cb = prev_b;
            nest[top].cl = prev == TOK_IDENT ? prev_l : 0;
            nest[top].arg = 0;
        } else if (t == ')' && top >= 0) {
            top--;
        } else if (t == ',' && top >= 0) {
            nest[top].arg++;
        } else if (t == TOK_IDENT && l == nl && !strncmp(src + b, src + nb, nl) &&
                   prev != '.' && !(prev == '>' && prev2 == '-')) {
            tokw w[4];
            peek(&x, w, 4);
            int incdec = (prev == '+' || prev == '-') && prev2 == prev && prev_end == b &&
                         prev2_end + 1 == prev_end;
            int unary_amp = prev == '&' && prev2 != '&' && prev2 != TOK_IDENT &&
                            prev2 != TOK_NUMBER && prev2 != ')' && prev2 != ']';
            int r;
            if (w[0].t == '[') {
                /* p[i]: skip the index, a member or swizzle, then look for a store. */
                lexer y = x;
                size_t b2, l2;
                int d = 0, t2;
                while ((t2 = next_tok(&y, &b2, &l2)) != TOK_END) {
                    d += t2 == '[' ? 1 : t2 == ']' ? -1 : 0;
                    if (d == 0)
                        break;
                }
                peek(&y, w, 3);
                while (w[0].t == '.' && w[1].t == TOK_IDENT) {
                    next_tok(&y, &b2, &l2);
                    next_tok(&y, &b2, &l2);
                    peek(&y, w, 3);
                }
                r = incdec || assigns(w) ? STORE_SEEN
                    : unary_amp || w[0].t == '['  ? STORE_DOUBT
                                                  : STORE_NONE;
            } else if (prev == '*' && (prev2 == '(' || prev2 == ';' || prev2 == '{' ||
                                       prev2 == '}' || prev2 == '=' || prev2 == ',')) {
                r = assigns(w) || incdec ? STORE_SEEN
                    : w[0].t == ';' || w[0].t == ')' || w[0].t == ',' ? STORE_NONE
                                                                      : STORE_DOUBT;
            } else if ((prev == '(' || prev == ',') && (w[0].t == ',' || w[0].t == ')') &&
                       top >= 0 && nest[top].cl) {
                r = call_stores(src, g, &x, nest[top].cb, nest[top].cl, nest[top].arg, depth);
            } else {
                r = STORE_DOUBT; /* pointer arithmetic, a copy of the pointer, ... */
            }
            if (r > worst)
                worst = r;
        }
        prev2 = prev;
        prev2_end = prev_end;
        prev = t;
        prev_b = b;
        prev_l = l;
        prev_end = b + l;
    }
    return worst;
}

int clf__source_param_stores(const char *src, const char *kernel, size_t param)
{
    if (!src || !kernel)
        return STORE_DOUBT;
    fgraph g = {NULL, 0, 0};
    size_t n = strlen(src), kl = strlen(kernel);
    scan_defines(src, n, &g);
    scan_functions(src, n, &g);
    int r = STORE_DOUBT; /* the kernel not found: made by a macro, or included */
    for (size_t i = 0; !g.oom && i < g.n; i++) {
        const fdecl *f = &g.f[i];
        size_t pb, pl;
        if (!f->kernel || f->body_b == f->body_e || f->name_l != kl ||
            strncmp(src + f->name_b, kernel, kl))
            continue;
        if (!param_name(src, f, param, &pb, &pl))
            break;
        r = body_stores(src, &g, f, pb, pl, 0);
        /* A macro that names the parameter could store through it unseen. */
        for (size_t j = 0; r == STORE_NONE && j < g.n; j++) {
            if (!g.f[j].macro)
                continue;
            lexer x = {src, g.f[j].body_b, g.f[j].body_e, 0, 0, 0};
            size_t b, l;
            int t;
            while ((t = next_tok(&x, &b, &l)) != TOK_END)
                if (t == TOK_IDENT && l == pl && !strncmp(src + b, src + pb, pl))
                    r = STORE_DOUBT;
        }
        break;
    }
    free(g.f);
    return g.oom ? STORE_DOUBT : r;
}
