/* The tools' log: the library's warnings, plus its notes on slow first steps. */
#ifndef CLF_TOOLS_NOTES_H
#define CLF_TOOLS_NOTES_H

/*
 * Unless the user chose a level with CLFLEET_LOG, show on stderr the library's warnings and
 * errors as it would ("clfleet: ..."), and of its info messages only the notes that a step
 * is about to take seconds (a kernel compiled from source on a binary-cache miss, a fleet's
 * first clBLAST GEMM): a tool that sits silent for 10 s looks hung. Call before the first
 * fleet is created (the level is read then).
 */
void clf_tool_show_slow_steps(void);

#endif
