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
 * Functions are found by a small tokenizer (cltok.c) that skips comments, string and
 * character literals, preprocessor lines and __attribute__((...)); a function made by a macro or
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
static int next_kernel(clf__lexer *x)
{
    size_t b, l;
    int t;
    while ((t = clf__tok_next(x, &b, &l)) != CLF__TOK_END)
        if (t == CLF__TOK_IDENT && (clf__tok_is(x, b, l, "kernel") || clf__tok_is(x, b, l, "__kernel")))
            return 1;
    return 0;
}

/*
 * After `kernel`: skip attributes and the return type to the function's name and the '(' of
 * its parameter list (*name_b, *name_l: the name in x->s). 0 when the kernel keyword starts
 * no function, or one that the scan cannot follow.
 */
static int kernel_head(clf__lexer *x, size_t *name_b, size_t *name_l)
{
    size_t b, l;
    int t;
    *name_b = *name_l = 0;
    while ((t = clf__tok_next(x, &b, &l)) != CLF__TOK_END) {
        if (t == CLF__TOK_IDENT && clf__tok_is(x, b, l, "__attribute__")) {
            if (clf__tok_next(x, &b, &l) != '(' || !clf__tok_skip_group(x))
                return 0;
        } else if (t == CLF__TOK_IDENT) {
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

/*
 * After `kernel`: find the function's name and parameter list, skipping attributes. Adds
 * the edit and the name; a kernel keyword that starts no function (or that the scan cannot
 * follow) adds nothing.
 */
static clf_status scan_kernel(clf__lexer *x, vedit **edits, size_t *nedits, char ***names,
                              size_t *nnames)
{
    size_t b, l, name_b, name_l;
    int t;
    if (!kernel_head(x, &name_b, &name_l))
        return CLF_SUCCESS;
    /* The parameter list: empty, `void`, or parameters to append to. */
    size_t open = x->i, first_b = 0, ntok = 0;
    int depth = 1, only_void = 0;
    while (depth && (t = clf__tok_next(x, &b, &l)) != CLF__TOK_END) {
        depth += t == '(' ? 1 : t == ')' ? -1 : 0;
        if (depth == 0)
            break;
        clf__tok_note_param(x, t, b, l, &ntok, &first_b, &only_void);
    }
    if (t == CLF__TOK_END)
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
/* Whether a call of (or a mention of the macro) name must pass the parameter. */
static int name_needs(const clf__fgraph *g, const char *src, size_t b, size_t l, int macro,
                      int array)
{
    for (size_t i = 0; i < g->n; i++) {
        const clf__fdecl *f = &g->f[i];
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
static int scan_body(const char *src, size_t b, size_t e, const clf__fgraph *g, int array,
                     vedit **edits, size_t *nedits, clf_status *st)
{
    clf__lexer x = {src, b, e, 0, 0, 0};
    size_t tb, tl;
    int t, needs = 0;
    while ((t = clf__tok_next(&x, &tb, &tl)) != CLF__TOK_END) {
        if (t != CLF__TOK_IDENT)
            continue;
        if (clf__tok_size_builtin(&x, tb, tl) || name_needs(g, src, tb, tl, 1, array)) {
            needs = 1;
            continue;
        }
        clf__lexer y = x;
        size_t b2, l2;
        if (clf__tok_next(&y, &b2, &l2) != '(' || !name_needs(g, src, tb, tl, 0, array))
            continue;
        needs = 1;
        if (!edits)
            continue;
        /* The call's ')' and whether it has arguments; the arguments are scanned next. */
        size_t ntok = 0;
        int depth = 1;
        while (depth && (t = clf__tok_next(&y, &b2, &l2)) != CLF__TOK_END) {
            depth += t == '(' ? 1 : t == ')' ? -1 : 0;
            ntok += depth != 0;
        }
        if (t == CLF__TOK_END || *st != CLF_SUCCESS)
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
    clf__fgraph g = {NULL, 0, 0};
    clf__tok_defines(src, n, &g);
    clf__tok_functions(src, n, &g);
    clf_status st = g.oom ? CLF_ERROR_OUT_OF_HOST_MEMORY : CLF_SUCCESS;
    /* To the fixed point: each round adds at least one function or macro, or ends. */
    for (int changed = 1; changed && st == CLF_SUCCESS;) {
        changed = 0;
        for (size_t i = 0; i < g.n; i++) {
            clf__fdecl *f = &g.f[i];
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
        clf__fdecl *f = &g.f[i];
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
    clf__lexer x = {src, 0, strlen(src), 1, 0, 0};
    size_t b, l;
    int t, uses = 0, offsets = 0;
    while ((t = clf__tok_next(&x, &b, &l)) != CLF__TOK_END) {
        uses |= t == CLF__TOK_IDENT &&
                (clf__tok_is(&x, b, l, "get_global_size") || clf__tok_is(&x, b, l, "get_num_groups") ||
                 clf__tok_is(&x, b, l, "get_global_linear_id"));
        offsets |= t == CLF__TOK_IDENT &&
                   (clf__tok_is(&x, b, l, "get_group_id") || clf__tok_is(&x, b, l, "get_global_offset") ||
                    clf__tok_is(&x, b, l, "get_global_linear_id"));
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
    x = (clf__lexer){src, 0, strlen(src), 1, 0, 0};
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
static clf_status scan_kernel_array(clf__lexer *x, vedit **edits, size_t *nedits, char ***names,
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
        t = clf__tok_next(x, &b, &l);
        if (t == CLF__TOK_END)
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
        clf__tok_note_param(x, t, b, l, &ntok, &first_b, &only_void);
        if (depth != 1)
            continue;
        if (t == '*') {
            star = 1;
            const_after = 0;
        } else if (t == CLF__TOK_IDENT) {
            if (clf__tok_is(x, b, l, "__global") || clf__tok_is(x, b, l, "global") ||
                clf__tok_is(x, b, l, "__constant") || clf__tok_is(x, b, l, "constant"))
                space = 1;
            else if (star && clf__tok_is(x, b, l, "const"))
                const_after = 1;
            else if (!clf__tok_is(x, b, l, "restrict") && !clf__tok_is(x, b, l, "__restrict") &&
                     !clf__tok_is(x, b, l, "volatile")) {
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
    while ((t = clf__tok_next(x, &b, &l)) == CLF__TOK_IDENT && clf__tok_is(x, b, l, "__attribute__"))
        if (clf__tok_next(x, &b, &l) != '(' || !clf__tok_skip_group(x))
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
    clf__lexer x = {src, 0, strlen(src), 1, 0, 0};
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

