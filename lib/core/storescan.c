/*
 * Does a kernel store through a pointer parameter? (clf__source_param_stores(), for
 * exec/check.c and flow/pipeline.c.)
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
#include "core.h"

#include <stdlib.h>
#include <string.h>

/* Token i of a small window: kind, start, length. */
typedef struct tokw {
    int t;
    size_t b, l;
} tokw;

/* The next n tokens of x (a copy: x does not move). */
static void peek(const clf__lexer *x, tokw *w, int n)
{
    clf__lexer y = *x;
    for (int i = 0; i < n; i++) {
        w[i].t = clf__tok_next(&y, &w[i].b, &w[i].l);
        if (w[i].t == CLF__TOK_END)
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

static int starts_with(const clf__lexer *x, size_t b, size_t l, const char *p)
{
    size_t n = strlen(p);
    return l >= n && !strncmp(x->s + b, p, n);
}

/* Parameter idx of function f: its name (the last identifier of its declaration, before
 * any `[`); 0 when it has none. */
static int param_name(const char *src, const clf__fdecl *f, size_t idx, size_t *nb, size_t *nl)
{
    clf__lexer x = {src, f->open, f->close, 0, 0, 0};
    size_t b, l, k = 0;
    int t, depth = 0;
    *nl = 0;
    while ((t = clf__tok_next(&x, &b, &l)) != CLF__TOK_END) {
        if (t == '(' || t == '[')
            depth++;
        else if (t == ')' || t == ']')
            depth--;
        else if (t == ',' && depth == 0)
            k++;
        else if (t == CLF__TOK_IDENT && depth == 0 && k == idx)
            *nb = b, *nl = l;
    }
    return *nl != 0;
}

enum { STORE_NONE = 0, STORE_DOUBT = 1, STORE_SEEN = 2 };

static int body_stores(const char *src, const clf__fgraph *g, const clf__fdecl *f, size_t nb, size_t nl,
                       int depth);

/* A whole-argument mention of the pointer, argument arg of a call of callee. */
static int call_stores(const char *src, const clf__fgraph *g, const clf__lexer *x, size_t cb, size_t cl,
                       size_t arg, int depth)
{
    if (starts_with(x, cb, cl, "vload") || clf__tok_is(x, cb, cl, "prefetch"))
        return STORE_NONE;
    if (starts_with(x, cb, cl, "vstore") || starts_with(x, cb, cl, "atomic_") ||
        starts_with(x, cb, cl, "atom_"))
        return STORE_SEEN;
    for (size_t i = 0; i < g->n; i++) {
        const clf__fdecl *h = &g->f[i];
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
static int body_stores(const char *src, const clf__fgraph *g, const clf__fdecl *f, size_t nb, size_t nl,
                       int depth)
{
    enum { MAXNEST = 64 };
    struct {
        size_t cb, cl, arg; /* the callee before the '(' (cl 0: none), the argument index */
    } nest[MAXNEST];
    int top = -1, worst = STORE_NONE;
    clf__lexer x = {src, f->body_b, f->body_e, 0, 0, 0};
    size_t b, l;
    int t, prev = 0, prev2 = 0;
    size_t prev_b = 0, prev_l = 0, prev_end = 0, prev2_end = 0;
    while (worst != STORE_SEEN && (t = clf__tok_next(&x, &b, &l)) != CLF__TOK_END) {
        if (t == '(') {
            if (top + 1 >= MAXNEST)
                return STORE_DOUBT;
            top++;
            nest[top].cb = prev_b;
            nest[top].cl = prev == CLF__TOK_IDENT ? prev_l : 0;
            nest[top].arg = 0;
        } else if (t == ')' && top >= 0) {
            top--;
        } else if (t == ',' && top >= 0) {
            nest[top].arg++;
        } else if (t == CLF__TOK_IDENT && l == nl && !strncmp(src + b, src + nb, nl) &&
                   prev != '.' && !(prev == '>' && prev2 == '-')) {
            tokw w[4];
            peek(&x, w, 4);
            int incdec = (prev == '+' || prev == '-') && prev2 == prev && prev_end == b &&
                         prev2_end + 1 == prev_end;
            int unary_amp = prev == '&' && prev2 != '&' && prev2 != CLF__TOK_IDENT &&
                            prev2 != CLF__TOK_NUMBER && prev2 != ')' && prev2 != ']';
            int r;
            if (w[0].t == '[') {
                /* p[i]: skip the index, a member or swizzle, then look for a store. */
                clf__lexer y = x;
                size_t b2, l2;
                int d = 0, t2;
                while ((t2 = clf__tok_next(&y, &b2, &l2)) != CLF__TOK_END) {
                    d += t2 == '[' ? 1 : t2 == ']' ? -1 : 0;
                    if (d == 0)
                        break;
                }
                peek(&y, w, 3);
                while (w[0].t == '.' && w[1].t == CLF__TOK_IDENT) {
                    clf__tok_next(&y, &b2, &l2);
                    clf__tok_next(&y, &b2, &l2);
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
    clf__fgraph g = {NULL, 0, 0};
    size_t n = strlen(src), kl = strlen(kernel);
    clf__tok_defines(src, n, &g);
    clf__tok_functions(src, n, &g);
    int r = STORE_DOUBT; /* the kernel not found: made by a macro, or included */
    for (size_t i = 0; !g.oom && i < g.n; i++) {
        const clf__fdecl *f = &g.f[i];
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
            clf__lexer x = {src, g.f[j].body_b, g.f[j].body_e, 0, 0, 0};
            size_t b, l;
            int t;
            while ((t = clf__tok_next(&x, &b, &l)) != CLF__TOK_END)
                if (t == CLF__TOK_IDENT && l == pl && !strncmp(src + b, src + pb, pl))
                    r = STORE_DOUBT;
        }
        break;
    }
    free(g.f);
    return g.oom ? STORE_DOUBT : r;
}
