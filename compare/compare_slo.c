/* compare_slo.c - parsing service-level objectives strictly: METRIC OP
 * NUMBER UNIT with METRIC in median|p50|p95|p99, OP in < and <=, a plain
 * positive decimal NUMBER and UNIT in us|ms|s ('p95<200ms', 'p99 <= 1s').
 * Anything else is refused with a message saying which part is wrong; a
 * limit is never guessed (no default unit). */
#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "compare.h"

static const char *compare_skip_space(const char *s)
{
    while (*s == ' ' || *s == '\t')
        s++;
    return s;
}

int compare_slo_parse(const char *text, struct compare_slo *slo, char *err, size_t errlen)
{
    memset(slo, 0, sizeof *slo);
    const char *s = compare_skip_space(text);
    const char *m = s;
    while (isalnum((unsigned char)*s) || *s == '.')
        s++;
    size_t mlen = (size_t)(s - m);
    if (!mlen) {
        snprintf(err, errlen, "SLO '%s': expected METRIC<LIMIT, e.g. p95<200ms", text);
        return -1;
    }
    if ((mlen == 6 && !strncmp(m, "median", 6)) || (mlen == 3 && !strncmp(m, "p50", 3)))
        slo->metric = COMPARE_MEDIAN;
    else if (mlen == 3 && !strncmp(m, "p95", 3))
        slo->metric = COMPARE_P95;
    else if (mlen == 3 && !strncmp(m, "p99", 3))
        slo->metric = COMPARE_P99;
    else {
        snprintf(err, errlen, "SLO '%s': unknown metric '%.*s' (use median, p95 or p99)", text,
                 (int)(mlen > 32 ? 32 : mlen), m);
        return -1;
    }
    s = compare_skip_space(s);
    if (*s != '<') {
        snprintf(err, errlen, "SLO '%s': expected < or <= after '%.*s'", text, (int)mlen, m);
        return -1;
    }
    s++;
    if (*s == '=') {
        slo->inclusive = 1;
        s++;
    }
    s = compare_skip_space(s);
    const char *num = s;
    int digits = 0, dots = 0;
    while (isdigit((unsigned char)*s) || *s == '.') {
        digits += isdigit((unsigned char)*s) != 0;
        dots += *s == '.';
        s++;
    }
    if (!digits || dots > 1) {
        snprintf(err, errlen, "SLO '%s': expected a positive number after '%s'", text,
                 slo->inclusive ? "<=" : "<");
        return -1;
    }
    char numbuf[64];
    size_t nlen = (size_t)(s - num);
    if (nlen >= sizeof numbuf) {
        snprintf(err, errlen, "SLO '%s': the limit has too many digits", text);
        return -1;
    }
    memcpy(numbuf, num, nlen);
    numbuf[nlen] = 0;
    double value = strtod(numbuf, NULL);
    if (!(value > 0) || !isfinite(value)) {
        snprintf(err, errlen, "SLO '%s': the limit must be greater than 0", text);
        return -1;
    }
    s = compare_skip_space(s);
    const char *unit = s;
    while (isalpha((unsigned char)*s))
        s++;
    size_t ulen = (size_t)(s - unit);
    double scale;
    if (!ulen) {
        snprintf(err, errlen, "SLO '%s': missing unit after %s (use us, ms or s)", text, numbuf);
        return -1;
    }
    if (ulen == 2 && !strncmp(unit, "us", 2))
        scale = 1e-6;
    else if (ulen == 2 && !strncmp(unit, "ms", 2))
        scale = 1e-3;
    else if (ulen == 1 && unit[0] == 's')
        scale = 1;
    else {
        snprintf(err, errlen, "SLO '%s': unknown unit '%.*s' (use us, ms or s)", text,
                 (int)(ulen > 16 ? 16 : ulen), unit);
        return -1;
    }
    s = compare_skip_space(s);
    if (*s) {
        snprintf(err, errlen, "SLO '%s': unexpected '%s' after the unit", text, s);
        return -1;
    }
    slo->limit_s = value * scale;
    snprintf(slo->text, sizeof slo->text, "%s %s %s %.*s", compare_metric_names[slo->metric],
             slo->inclusive ? "<=" : "<", numbuf, (int)ulen, unit);
    return 0;
}

int compare_slo_met(const struct compare_slo *slo, const struct compare_stat *s)
{
    double edge = s->hi > s->value ? s->hi : s->value; /* pessimistic: the slow edge */
    return slo->inclusive ? edge <= slo->limit_s : edge < slo->limit_s;
}
