/* JSON output shared by clfleet-info and clfleet-bench. */
#include "json.h"

#include <math.h>
#include <stdio.h>

void clf_tool_json_string(const char *s)
{
    putchar('"');
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            printf("\\%c", c);
        else if (c < 0x20)
            printf("\\u%04x", c);
        else
            putchar(c);
    }
    putchar('"');
}

void clf_tool_json_num(double v)
{
    if (isfinite(v))
        printf("%.6g", v);
    else
        printf("null");
}
