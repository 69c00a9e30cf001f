/* fuzz_label_rules.c - libFuzzer target for labels/label_rules.c on what a
 * traced app controls: the request labels the collector and the analyzer
 * run the rules over (label_rules_is_label, label_rules_apply), plus the
 * NAME side of a rule and its shell-quoted description.
 *
 * The REGEX side is not fuzzed with arbitrary syntax: rules are the user's
 * own configuration, and glibc's regcomp on nested bounded repetitions
 * (e.g. "(a{9999}){9999}") takes memory and time without limit by design;
 * regex bytes are mapped onto a safe alphabet instead.
 * Must never: accept a result that points outside the label or the rule
 * names, or a description that overruns its buffer. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "label_rules.h"

static struct label_rules *fuzz_fixed_rules(void)
{
    static const char *const specs[] = {
        "search=^GET /(index\\.php)?\\?(.*&)?s=",
        "post=^GET /(index\\.php)?\\?(.*&)?p=[0-9]",
        "login=^POST /wp-login\\.php",
        "any-static=\\.(css|js|png)$",
    };
    char err[256];
    struct label_rules *r = label_rules_new();
    if (!r)
        abort();
    for (size_t i = 0; i < sizeof specs / sizeof specs[0]; i++)
        if (label_rules_add(r, specs[i], err, sizeof err))
            abort();
    return r;
}

static void fuzz_check_apply(const struct label_rules *r, const char *label, size_t len,
                             int drop_query)
{
    const char *out = NULL;
    size_t n = label_rules_apply(r, label, len, drop_query, &out);
    if (!out)
        abort();
    int inside = out >= label && out + n <= label + len;
    if (!inside && n > LABEL_RULES_NAME_MAX)
        abort();
    (void)label_rules_is_label(label, len);
}

/* A rule spec from data: NAME bytes as given (up to the first '='), then a
 * regex over a safe alphabet. */
static void fuzz_spec(const uint8_t *data, size_t size)
{
    static const char alphabet[] = "abcz/?^$.=' \\-";
    char spec[160];
    size_t n = size < sizeof spec - 1 ? size : sizeof spec - 1;
    int in_regex = 0;
    for (size_t i = 0; i < n; i++) {
        char c = (char)data[i];
        if (in_regex)
            c = alphabet[data[i] % (sizeof alphabet - 1)];
        if (c == '\0')
            c = 'x';
        if (c == '=')
            in_regex = 1;
        spec[i] = c;
    }
    spec[n] = '\0';
    struct label_rules *r = label_rules_new();
    if (!r)
        abort();
    char err[256];
    if (label_rules_add(r, spec, err, sizeof err) == 0) {
        char desc[64];
        size_t d = label_rules_describe(r, desc, sizeof desc);
        if (d >= sizeof desc || strlen(desc) != d)
            abort();
        fuzz_check_apply(r, spec, n, 1);
    } else if (!memchr(err, '\0', sizeof err)) {
        abort();
    }
    label_rules_free(r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct label_rules *fixed;
    if (!fixed)
        fixed = fuzz_fixed_rules();
    if (size == 0)
        return 0;
    const char *label = (const char *)data + 1;
    fuzz_check_apply(fixed, label, size - 1, data[0] & 1);
    fuzz_check_apply(NULL, label, size - 1, data[0] & 2);
    if (data[0] & 4)
        fuzz_spec(data + 1, size - 1);
    return 0;
}
