/* jsonlint: exit 0 when standard input is one valid JSON value (RFC 8259). */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *p;
static int depth;

static void ws(void)
{
    while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
        p++;
}

static int value(void);

static int string(void)
{
    if (*p++ != '"')
        return 0;
    while (*p != '"') {
        unsigned char c = (unsigned char)*p++;
        if (c < 0x20)
            return 0;
        if (c == '\\') {
            c = (unsigned char)*p++;
            if (c == 'u') {
                for (int i = 0; i < 4; i++)
                    if (!isxdigit((unsigned char)*p++))
                        return 0;
            } else if (!strchr("\"\\/bfnrt", c) || !c) {
                return 0;
            }
        }
    }
    p++;
    return 1;
}

static int number(void)
{
    if (*p == '-')
        p++;
    if (*p == '0')
        p++;
    else if (isdigit((unsigned char)*p))
        while (isdigit((unsigned char)*p))
            p++;
    else
        return 0;
    if (*p == '.') {
        p++;
        if (!isdigit((unsigned char)*p))
            return 0;
        while (isdigit((unsigned char)*p))
            p++;
    }
    if (*p == 'e' || *p == 'E') {
        p++;
        if (*p == '+' || *p == '-')
            p++;
        if (!isdigit((unsigned char)*p))
            return 0;
        while (isdigit((unsigned char)*p))
            p++;
    }
    return 1;
}

static int seq(char close, int object)
{
    p++;
    ws();
    if (*p == close) {
        p++;
        return 1;
    }
    for (;;) {
        ws();
        if (object) {
            if (!string())
                return 0;
            ws();
            if (*p++ != ':')
                return 0;
        }
        if (!value())
            return 0;
        ws();
        if (*p == close) {
            p++;
            return 1;
        }
        if (*p++ != ',')
            return 0;
    }
}

static int value(void)
{
    int ok;
    if (++depth > 512)
        return 0;
    ws();
    if (*p == '{')
        ok = seq('}', 1);
    else if (*p == '[')
        ok = seq(']', 0);
    else if (*p == '"')
        ok = string();
    else if (!strncmp(p, "true", 4) || !strncmp(p, "null", 4))
        p += 4, ok = 1;
    else if (!strncmp(p, "false", 5))
        p += 5, ok = 1;
    else
        ok = number();
    depth--;
    return ok;
}

int main(void)
{
    size_t cap = 1 << 16, n = 0, r;
    char *buf = malloc(cap);
    while (buf && (r = fread(buf + n, 1, cap - n - 1, stdin)) > 0) {
        n += r;
        if (n + 1 == cap)
            buf = realloc(buf, cap *= 2);
    }
    if (!buf)
        return 2;
    buf[n] = '\0';
    if (strlen(buf) != n) {
        fprintf(stderr, "jsonlint: NUL byte in input\n");
        return 1;
    }
    p = buf;
    int ok = value();
    ws();
    ok = ok && *p == '\0';
    if (!ok)
        fprintf(stderr, "jsonlint: invalid JSON at byte %ld\n", (long)(p - buf));
    free(buf);
    return ok ? 0 : 1;
}
