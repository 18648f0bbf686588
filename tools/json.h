/* JSON output shared by clfleet-info and clfleet-bench; both write to standard output. */
#ifndef CLFLEET_TOOLS_JSON_H
#define CLFLEET_TOOLS_JSON_H

/* s as a JSON string: quoted, with '"', '\\' and control characters escaped. */
void clf_tool_json_string(const char *s);

/* v with 6 significant digits, or null: JSON has no NaN or infinity. */
void clf_tool_json_num(double v);

#endif
