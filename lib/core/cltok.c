/*
 * The OpenCL C source tokenizer that clfleet's source scans share: tokens (comments, string
 * and character literals and preprocessor lines skipped), the #define lines, and the
 * functions defined or declared at file scope. rangearg.c rewrites sources with it (the
 * hidden range parameter), storescan.c reads them (broadcast parameters that may be
 * written). A scan, not a compiler: what it cannot follow, each user treats with caution.
 */
#include "core.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

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

/* Skip to the end of the line (not past it), honouring backslash continuations. */
void clf__tok_skip_line(clf__lexer *x)
{
    while (x->i < x->n && x->s[x->i] != '\n') {
        if (x->s[x->i] == '\\' && x->i + 1 < x->n && x->s[x->i + 1] == '\n')
            x->i++;
        x->i++;
    }
}

/* The next token: its kind (CLF__TOK_* or the punctuation character), start and length. */
int clf__tok_next(clf__lexer *x, size_t *start, size_t *len)
{
    const char *s = x->s;
    for (;;) {
        if (x->i >= x->n)
            return CLF__TOK_END;
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
            clf__tok_skip_line(x);
        } else if (c == '/' && c1 == '*') {
            const char *e = x->i + 2 < x->n ? strstr(s + x->i + 2, "*/") : NULL;
            x->i = e ? (size_t)(e - s) + 2 : x->n;
        } else if (c == '#' && x->bol) {
            size_t j = x->i + 1;
            while (j < x->n && (s[j] == ' ' || s[j] == '\t'))
                j++;
            if (x->n - j >= 7 && !strncmp(s + j, "include", 7))
                x->include = 1;
            clf__tok_skip_line(x);
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
        kind = CLF__TOK_LITERAL;
    } else if (isalpha((unsigned char)c) || c == '_') {
        while (x->i < x->n && (isalnum((unsigned char)s[x->i]) || s[x->i] == '_'))
            x->i++;
        kind = CLF__TOK_IDENT;
    } else if (isdigit((unsigned char)c)) {
        while (x->i < x->n && (isalnum((unsigned char)s[x->i]) || s[x->i] == '_' ||
                               s[x->i] == '.'))
            x->i++;
        kind = CLF__TOK_NUMBER;
    } else {
        x->i++;
        kind = (unsigned char)c;
    }
    *start = b;
    *len = x->i - b;
    return kind;
}

int clf__tok_is(const clf__lexer *x, size_t start, size_t len, const char *word)
{
    return strlen(word) == len && !strncmp(x->s + start, word, len);
}

/* Skip a balanced parenthesised group whose '(' was just read; 0 at the end of the text. */
int clf__tok_skip_group(clf__lexer *x)
{
    size_t b, l;
    int depth = 1, t;
    while ((t = clf__tok_next(x, &b, &l)) != CLF__TOK_END) {
        depth += t == '(' ? 1 : t == ')' ? -1 : 0;
        if (depth == 0)
            return 1;
    }
    return 0;
}

/* A token (t at [b, b + l)) of a parameter list: counts it in *ntok; *first_b is where the
 * first starts; *only_void says whether the list so far is the single word `void`. */
void clf__tok_note_param(const clf__lexer *x, int t, size_t b, size_t l, size_t *ntok,
                           size_t *first_b, int *only_void)
{
    if ((*ntok)++ == 0) {
        *first_b = b;
        *only_void = t == CLF__TOK_IDENT && clf__tok_is(x, b, l, "void");
    } else {
        *only_void = 0;
    }
}

static clf__fdecl *fgraph_add(clf__fgraph *g)
{
    clf__fdecl *v = realloc(g->f, (g->n + 1) * sizeof *v);
    if (!v) {
        g->oom = 1;
        return NULL;
    }
    g->f = v;
    memset(&v[g->n], 0, sizeof *v);
    return &v[g->n++];
}

int clf__tok_size_builtin(const clf__lexer *x, size_t b, size_t l)
{
    return clf__tok_is(x, b, l, "get_global_size") || clf__tok_is(x, b, l, "get_num_groups") ||
           clf__tok_is(x, b, l, "get_global_linear_id");
}

/* The #define lines of src: each macro's name and replacement text (after its parameter
 * list when it has one), skipping comments and literals as clf__tok_next() does. */
void clf__tok_defines(const char *src, size_t n, clf__fgraph *g)
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
        clf__lexer y = {src, i, n, 0, 0, 0};
        clf__tok_skip_line(&y);
        size_t e = y.i, b, l; /* the directive's end (continuations included) */
        clf__lexer x = {src, i + 1, e, 0, 0, 0};
        if (clf__tok_next(&x, &b, &l) == CLF__TOK_IDENT && clf__tok_is(&x, b, l, "define") &&
            clf__tok_next(&x, &b, &l) == CLF__TOK_IDENT) {
            clf__fdecl *m = fgraph_add(g);
            if (m) {
                m->macro = 1;
                m->name_b = b;
                m->name_l = l;
                if (x.i < e && src[x.i] == '(') { /* function-like: its parameters */
                    size_t pb, pl;
                    clf__tok_next(&x, &pb, &pl);
                    clf__tok_skip_group(&x);
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
void clf__tok_functions(const char *src, size_t n, clf__fgraph *g)
{
    clf__lexer x = {src, 0, n, 1, 0, 0};
    size_t b, l;
    int t, kern = 0, init = 0;
    while (!g->oom && (t = clf__tok_next(&x, &b, &l)) != CLF__TOK_END) {
        if (t == ';') {
            kern = init = 0;
        } else if (t == '=') {
            init = 1;
        } else if (t == '{' || t == '(' || t == '[') { /* a struct, an initializer: skip */
            int depth = 1, o = t, c = t == '{' ? '}' : t == '(' ? ')' : ']';
            while (depth && (t = clf__tok_next(&x, &b, &l)) != CLF__TOK_END)
                depth += t == o ? 1 : t == c ? -1 : 0;
        } else if (t == CLF__TOK_IDENT &&
                   (clf__tok_is(&x, b, l, "kernel") || clf__tok_is(&x, b, l, "__kernel"))) {
            kern = 1;
        } else if (t == CLF__TOK_IDENT && clf__tok_is(&x, b, l, "__attribute__")) {
            size_t b2, l2;
            if (clf__tok_next(&x, &b2, &l2) == '(')
                clf__tok_skip_group(&x);
        } else if (t == CLF__TOK_IDENT && !init) {
            clf__lexer y = x;
            size_t b2, l2;
            if (clf__tok_next(&y, &b2, &l2) != '(')
                continue;
            clf__fdecl d = {b, l, y.i, 0, 0, 0, 0, 0, 0, kern, 0, 0};
            int depth = 1;
            while (depth && (t = clf__tok_next(&y, &b2, &l2)) != CLF__TOK_END) {
                depth += t == '(' ? 1 : t == ')' ? -1 : 0;
                if (depth)
                    clf__tok_note_param(&y, t, b2, l2, &d.ntok, &d.first_b, &d.only_void);
            }
            if (t == CLF__TOK_END)
                return;
            d.close = b2;
            clf__lexer z = y;
            while ((t = clf__tok_next(&z, &b2, &l2)) == CLF__TOK_IDENT && clf__tok_is(&z, b2, l2, "__attribute__"))
                if (clf__tok_next(&z, &b2, &l2) != '(' || !clf__tok_skip_group(&z))
                    break;
            if (t == '{') {
                d.body_b = z.i;
                depth = 1;
                while (depth && (t = clf__tok_next(&z, &b2, &l2)) != CLF__TOK_END)
                    depth += t == '{' ? 1 : t == '}' ? -1 : 0;
                d.body_e = t == CLF__TOK_END ? z.n : b2;
                kern = init = 0;
            } else if (t != ';') {
                continue; /* not a function: a macro's use, say; go on after the name */
            }
            clf__fdecl *f = fgraph_add(g);
            if (f)
                *f = d;
            x = z;
            if (t == ';')
                kern = init = 0;
        }
    }
}

