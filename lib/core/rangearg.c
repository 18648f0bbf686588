/*
 * The hidden range parameter: how get_global_size() and get_num_groups() return the whole
 * range's sizes in every chunk of a launch (cl/clfleet.h says why they would not).
 *
 * OpenCL 1.2 has no program-scope variable the host can set, and rebuilding a program per
 * range size would cost a build per launch. So when a program's source names either
 * built-in, or get_global_linear_id() (OpenCL C 2.0: it needs them), or includes a file
 * (which might), the source is rewritten before the build: every kernel function gets a
 * trailing parameter `const ulong4 clfleet_global_size_only_in_kernels` (the range's
 * sizes, 1 past its dimensions), and the prelude's macros read it. Whoever creates a
 * kernel of a user program sets it (clf__program_set_range()). The rewrite only inserts
 * text within lines, so the user's line numbers stay right.
 *
 * Kernel definitions are found by a small tokenizer that skips comments, string and
 * character literals, preprocessor lines and __attribute__((...)); a kernel made by a
 * macro or defined in an included file is not found and gets no parameter. Where the
 * source names the built-ins, a launch that splits such a kernel into chunks is refused
 * (launch.c): it could not be given the sizes.
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
} lexer;

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

/* One edit of the source: replace [from, to) with the hidden declaration, after sep. */
typedef struct edit {
    size_t from, to;
    const char *sep;
} edit;

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

/*
 * After `kernel`: find the function's name and parameter list, skipping attributes. Adds
 * the edit and the name; a kernel keyword that starts no function (or that the scan cannot
 * follow) adds nothing.
 */
static clf_status scan_kernel(lexer *x, edit **edits, size_t *nedits, char ***names,
                              size_t *nnames)
{
    size_t b, l, name_b = 0, name_l = 0;
    int t;
    while ((t = next_tok(x, &b, &l)) != TOK_END) {
        if (t == TOK_IDENT && tok_is(x, b, l, "__attribute__")) {
            if (next_tok(x, &b, &l) != '(' || !skip_group(x))
                return CLF_SUCCESS;
        } else if (t == TOK_IDENT) {
            name_b = b;
            name_l = l;
        } else if (t == '(' && name_l) {
            break;
        } else if (t != '*') {
            return CLF_SUCCESS;
        }
    }
    if (t == TOK_END)
        return CLF_SUCCESS;
    /* The parameter list: empty, `void`, or parameters to append to. */
    size_t open = x->i, first_b = 0, ntok = 0;
    int depth = 1, only_void = 0;
    while (depth && (t = next_tok(x, &b, &l)) != TOK_END) {
        depth += t == '(' ? 1 : t == ')' ? -1 : 0;
        if (depth == 0)
            break;
        if (ntok++ == 0) {
            first_b = b;
            only_void = t == TOK_IDENT && tok_is(x, b, l, "void");
        } else {
            only_void = 0;
        }
    }
    if (t == TOK_END)
        return CLF_SUCCESS;
    edit *v = realloc(*edits, (*nedits + 1) * sizeof *v);
    if (!v)
        return CLF_ERROR_OUT_OF_HOST_MEMORY;
    *edits = v;
    if (ntok == 0 || only_void)
        v[*nedits] = (edit){ntok ? first_b : open, ntok ? first_b + 4 : open, ""};
    else
        v[*nedits] = (edit){b, b, ", "};
    (*nedits)++;
    return add_name(names, nnames, x->s + name_b, name_l);
}

clf_status clf__range_rewrite(const char *src, char **out, char ***names, size_t *nnames,
                              int *named)
{
    *out = NULL;
    *names = NULL;
    *nnames = 0;
    *named = 0;
    lexer x = {src, 0, strlen(src), 1, 0};
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
    *named = (uses ? CLF__NAMES_SIZES : 0) | (offsets || x.include ? CLF__NAMES_OFFSETS : 0);
    if (!uses && !x.include)
        return CLF_SUCCESS;
    edit *edits = NULL;
    size_t nedits = 0;
    clf_status st = CLF_SUCCESS;
    x = (lexer){src, 0, strlen(src), 1, 0};
    while (st == CLF_SUCCESS && (t = next_tok(&x, &b, &l)) != TOK_END)
        if (t == TOK_IDENT && (tok_is(&x, b, l, "kernel") || tok_is(&x, b, l, "__kernel")))
            st = scan_kernel(&x, &edits, &nedits, names, nnames);
    size_t extra = 0, add = strlen(HIDDEN_DECL) + 2;
    if (st == CLF_SUCCESS && clf__mul_overflow(nedits, add, &extra))
        st = CLF_ERROR_SIZE_OVERFLOW;
    char *s = st == CLF_SUCCESS ? malloc(x.n + extra + 1) : NULL;
    if (st == CLF_SUCCESS && !s)
        st = CLF_ERROR_OUT_OF_HOST_MEMORY;
    if (s) {
        size_t from = 0, o = 0;
        for (size_t e = 0; e < nedits; e++) { /* in source order */
            memcpy(s + o, src + from, edits[e].from - from);
            o += edits[e].from - from;
            o += (size_t)sprintf(s + o, "%s%s", edits[e].sep, HIDDEN_DECL);
            from = edits[e].to;
        }
        memcpy(s + o, src + from, x.n - from + 1);
        *out = s;
    }
    free(edits);
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
