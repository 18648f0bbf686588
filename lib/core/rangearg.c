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
 * macro or defined in an included file is not found and gets no parameter. A kernel whose
 * name alone is a macro gets it under the macro's name: program.c learns its real name from
 * the driver after the build (range_kernels_from_driver()). Where the
 * source names the built-ins, a launch that splits such a kernel into chunks is refused
 * (exec/check.c): it could not be given the sizes.
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

/* One edit of the source: replace [from, to) with text. */
typedef struct vedit {
    size_t from, to;
    char *text; /* malloc'd */
} vedit;

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
    e[(*n)++] = (vedit){from, to, text};
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

/* When st (the scan's status) is a success, the source (n bytes) with the edits (in source
 * order) applied, in *out; st otherwise. Frees the edits' texts and the list either way. */
static clf_status apply_edits(clf_status st, const char *src, size_t n, vedit *edits,
                              size_t nedits, char **out)
{
    size_t extra = 0;
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
    vedit *edits = NULL;
    size_t nedits = 0;
    clf_status st = CLF_SUCCESS;
    x = (lexer){src, 0, strlen(src), 1, 0};
    while (st == CLF_SUCCESS && next_kernel(&x))
        st = scan_kernel(&x, &edits, &nedits, names, nnames);
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
    lexer x = {src, 0, strlen(src), 1, 0};
    vedit *edits = NULL;
    size_t nedits = 0;
    clf_status st = CLF_SUCCESS;
    while (st == CLF_SUCCESS && next_kernel(&x))
        st = scan_kernel_array(&x, &edits, &nedits, names, nnames, why, masks);
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
