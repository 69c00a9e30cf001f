/* label_rules.c - parsing and matching `--label 'NAME=REGEX'` rules
 * (label_rules.h). Matching runs in the collector once per distinct label
 * string and in the analyzer once per (trace, label string): never per
 * event. Nothing here prints, exits, or keeps a pointer into its caller's
 * memory. */
#include "label_rules.h"

#include <errno.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct label_rule {
    char name[LABEL_RULES_NAME_MAX + 1];
    size_t name_len;
    char *spec; /* "NAME=REGEX" as given, for messages and describe */
    regex_t re;
};

struct label_rules {
    struct label_rule rule[LABEL_RULES_MAX];
    size_t n;
};

struct label_rules *label_rules_new(void)
{
    return calloc(1, sizeof(struct label_rules));
}

void label_rules_free(struct label_rules *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->n; i++) {
        regfree(&r->rule[i].re);
        free(r->rule[i].spec);
    }
    free(r);
}

size_t label_rules_count(const struct label_rules *r)
{
    return r ? r->n : 0;
}

/* Why the NAME of spec (name_len bytes) cannot be a label, or NULL. */
static const char *label_rules_bad_name(const char *name, size_t name_len)
{
    if (name_len == 0)
        return "empty NAME (NAME=REGEX)";
    if (name_len > LABEL_RULES_NAME_MAX)
        return "NAME longer than 63 bytes";
    for (size_t i = 0; i < name_len; i++)
        if ((unsigned char)name[i] < 0x20 || (unsigned char)name[i] == 0x7f)
            return "control character in NAME";
    return NULL;
}

int label_rules_add(struct label_rules *r, const char *spec, char *err, size_t errlen)
{
    const char *eq = strchr(spec, '=');
    const char *why = NULL;
    if (!eq)
        why = "no '=' (NAME=REGEX)";
    if (!why)
        why = label_rules_bad_name(spec, (size_t)(eq - spec));
    if (!why && !eq[1])
        why = "empty REGEX (NAME=REGEX)";
    if (!why && r->n == LABEL_RULES_MAX)
        why = "more than 64 rules";
    if (why) {
        snprintf(err, errlen, "rule '%.200s': %s", spec, why);
        return -1;
    }
    struct label_rule *rule = &r->rule[r->n];
    int rc = regcomp(&rule->re, eq + 1, REG_EXTENDED | REG_NOSUB);
    if (rc != 0) {
        char msg[160];
        regerror(rc, &rule->re, msg, sizeof msg);
        snprintf(err, errlen, "rule '%.200s': bad REGEX: %s", spec, msg);
        return -1;
    }
    rule->spec = strdup(spec);
    if (!rule->spec) {
        regfree(&rule->re);
        snprintf(err, errlen, "rule '%.200s': out of memory", spec);
        return -1;
    }
    rule->name_len = (size_t)(eq - spec);
    memcpy(rule->name, spec, rule->name_len);
    rule->name[rule->name_len] = '\0';
    r->n++;
    return 0;
}

/* Line without leading and trailing blanks (spaces, tabs, CR, LF). */
static char *label_rules_trim(char *line)
{
    while (*line == ' ' || *line == '\t')
        line++;
    size_t n = strlen(line);
    while (n > 0 && strchr(" \t\r\n", line[n - 1]))
        line[--n] = '\0';
    return line;
}

int label_rules_add_file(struct label_rules *r, const char *path, char *err, size_t errlen)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    char *buf = NULL;
    size_t cap = 0;
    unsigned line_no = 0;
    int rc = 0;
    while (getline(&buf, &cap, f) >= 0) {
        line_no++;
        char *line = label_rules_trim(buf);
        if (!*line || *line == '#')
            continue;
        char why[512];
        if (label_rules_add(r, line, why, sizeof why) != 0) {
            snprintf(err, errlen, "%s:%u: %s", path, line_no, why);
            rc = -1;
            goto done;
        }
    }
    if (ferror(f)) {
        snprintf(err, errlen, "%s: read error", path);
        rc = -1;
    }
done:
    free(buf);
    fclose(f);
    return rc;
}

int label_rules_is_label(const char *s, size_t len)
{
    static const char tchar[] = "!#$%&'*+-.^_`|~";
    size_t i = 0;
    for (; i < len && s[i] != ' '; i++) {
        unsigned char c = (unsigned char)s[i];
        if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
              (c && strchr(tchar, c))))
            return 0;
    }
    if (i == 0 || i == len)
        return 0; /* no method, or no space after it */
    const char *t = s + i + 1;
    size_t tl = len - i - 1;
    if (!(tl && (t[0] == '/' || (tl == 1 && t[0] == '*') || (tl > 7 && !memcmp(t, "http://", 7)) ||
                 (tl > 8 && !memcmp(t, "https://", 8)))))
        return 0;
    for (size_t k = 0; k < tl; k++)
        if ((unsigned char)t[k] <= ' ' || (unsigned char)t[k] == 0x7f)
            return 0;
    return 1;
}

size_t label_rules_apply(const struct label_rules *r, const char *label, size_t len, int drop_query,
                         const char **out)
{
    if (label_rules_count(r) > 0) {
        /* A string from a trace has no NUL of its own. regexec gets a
         * terminated copy rather than REG_STARTEND: sanitizer runtimes
         * intercept regexec and read the subject up to its NUL whatever
         * the flags say (fuzz_label_rules found it). Labels are short; a
         * long one gets a heap copy, and one that cannot be copied keeps
         * its default label. */
        char local[1024], *copy = len < sizeof local ? local : malloc(len + 1);
        if (copy) {
            memcpy(copy, label, len);
            copy[len] = '\0';
            size_t hit = label_rules_count(r);
            for (size_t i = 0; i < label_rules_count(r) && hit == label_rules_count(r); i++)
                if (regexec(&r->rule[i].re, copy, 0, NULL, 0) == 0)
                    hit = i;
            if (copy != local)
                free(copy);
            if (hit < label_rules_count(r)) {
                *out = r->rule[hit].name;
                return r->rule[hit].name_len;
            }
        }
    }
    *out = label;
    const char *q = drop_query ? memchr(label, '?', len) : NULL;
    return q ? (size_t)(q - label) : len;
}

/* Appends spec shell-quoted ('...', a ' as '\'') as "--label 'SPEC'" at
 * out[n] when it fits in cap (with the NUL); returns the new length or 0. */
static size_t label_rules_put_quoted(const char *spec, char *out, size_t n, size_t cap)
{
    static const char head[] = "--label '";
    size_t need = sizeof head - 1 + 2; /* head, closing quote, NUL */
    for (const char *p = spec; *p; p++)
        need += *p == '\'' ? 4 : 1;
    if (n + need > cap)
        return 0;
    memcpy(out + n, head, sizeof head - 1);
    n += sizeof head - 1;
    for (const char *p = spec; *p; p++) {
        if (*p == '\'') {
            memcpy(out + n, "'\\''", 4);
            n += 4;
        } else {
            out[n++] = *p;
        }
    }
    out[n++] = '\'';
    out[n] = '\0';
    return n;
}

size_t label_rules_describe(const struct label_rules *r, char *out, size_t cap)
{
    if (!cap)
        return 0;
    out[0] = '\0';
    size_t end[LABEL_RULES_MAX + 1] = {0}; /* end[i]: length after i whole rules */
    size_t i = 0;
    for (; i < label_rules_count(r); i++) {
        size_t n = end[i], sep = n ? 1 : 0;
        size_t m = label_rules_put_quoted(r->rule[i].spec, out, n + sep, cap);
        if (!m)
            break;
        if (sep)
            out[n] = ' ';
        end[i + 1] = m;
    }
    /* rules left out: say how many, giving back whole rules for room */
    for (size_t kept = i; kept < label_rules_count(r); kept--) {
        size_t n = end[kept];
        int k = snprintf(out + n, cap - n, "%s+%zu more --label rules", n ? " " : "",
                         label_rules_count(r) - kept);
        if (k >= 0 && (size_t)k < cap - n)
            return n + (size_t)k;
        out[n] = '\0';
        if (kept == 0)
            return 0; /* not even the count fits */
    }
    return end[i];
}
