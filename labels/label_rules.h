/* label_rules.h - request labels users choose: `--label 'NAME=REGEX'` rules,
 * each a POSIX extended regex matched against a request label as the tracer
 * writes it, "METHOD /path?query"; the first rule that matches gives the
 * request the label NAME. Shared by the collector (record time) and the
 * analyzer (analyze time), so both read rules and match them the same way.
 * A library: it never prints or exits; errors are one line naming the rule
 * (and the file and line it came from). */
#ifndef PREPLAY_LABEL_RULES_H
#define PREPLAY_LABEL_RULES_H

#include <stddef.h>

#define LABEL_RULES_MAX 64      /* rules per command */
#define LABEL_RULES_NAME_MAX 63 /* bytes of a NAME */

struct label_rules;

/* An empty rule list, or NULL when out of memory. */
struct label_rules *label_rules_new(void);
void label_rules_free(struct label_rules *r);

/* Adds the rule `spec` ("NAME=REGEX": NAME up to the first '=', 1 to
 * LABEL_RULES_NAME_MAX bytes without control characters; REGEX not empty).
 * Returns 0, or -1 with "rule 'SPEC': reason" in err. */
int label_rules_add(struct label_rules *r, const char *spec, char *err, size_t errlen);

/* Adds the rules of a file, one "NAME=REGEX" per line; blank lines and
 * lines whose first non-blank is '#' are skipped, leading and trailing
 * blanks (spaces, tabs, CR) are not part of the rule. Returns 0, or -1 with
 * "FILE:LINE: rule 'SPEC': reason" (or "FILE: reason") in err. */
int label_rules_add_file(struct label_rules *r, const char *path, char *err, size_t errlen);

/* Number of rules (0 for NULL). */
size_t label_rules_count(const struct label_rules *r);

/* Is s (len bytes) a request label as the tracer writes them: an HTTP
 * method (a token), one space, and a target starting with '/', "*",
 * "http://" or "https://" with no space or control byte in it? The
 * collector rewrites only strings of this form. */
int label_rules_is_label(const char *s, size_t len);

/* The label the request labelled `label` (len bytes) gets: the NAME of
 * the first rule that matches it; else, when drop_query, the label up to
 * its first '?'; else the label itself. Sets *out to those bytes (the
 * rule's name or a prefix of label) and returns their length. r may be
 * NULL (no rules). */
size_t label_rules_apply(const struct label_rules *r, const char *label, size_t len, int drop_query,
                         const char **out);

/* Writes the rules as the command line spells them, "--label 'NAME=REGEX'"
 * each (shell-quoted, in order, separated by a space) into out (cap bytes,
 * NUL-terminated). Only whole rules are written: when the rest does not fit,
 * " +K more --label rules" ends the text instead (if that fits). Returns
 * the length written. */
size_t label_rules_describe(const struct label_rules *r, char *out, size_t cap);

#endif
