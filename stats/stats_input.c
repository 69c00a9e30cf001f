/* stats_input.c - the sample reader behind `preplay stats` (see
 * stats_input.h). Every record is checked: values must be finite and >= 0
 * (they are durations), interval indices whole numbers >= 0, timestamps
 * finite. A bad record costs one diagnostic line and is skipped; it never
 * stops the rest of the file from being read. Must never read past `len`:
 * it is fuzzed (tests/stats/fuzz_stats_input.c). */
#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "stats.h"
#include "stats_input.h"

#define STATS_FIELD_MAX 8
#define STATS_TEXT_MAX 256

struct stats_columns {
    int value, time, label, count;
};

/* Copy field text [from, to) trimmed into out (truncated to STATS_TEXT_MAX). */
static void stats_field_text(const char *from, const char *to, char *out)
{
    while (from < to && isspace((unsigned char)*from))
        from++;
    while (to > from && isspace((unsigned char)to[-1]))
        to--;
    size_t n = (size_t)(to - from);
    if (n >= STATS_TEXT_MAX)
        n = STATS_TEXT_MAX - 1;
    memcpy(out, from, n);
    out[n] = 0;
}

static int stats_parse_number(const char *text, double *out)
{
    if (!text[0])
        return -1;
    char *end;
    *out = strtod(text, &end);
    return *end ? -1 : 0;
}

/* Split a line into up to STATS_FIELD_MAX comma-separated trimmed fields. */
static int stats_split(const char *line, const char *end, char fields[][STATS_TEXT_MAX])
{
    int count = 0;
    const char *start = line;
    for (const char *p = line;; p++) {
        if (p == end || *p == ',') {
            if (count < STATS_FIELD_MAX)
                stats_field_text(start, p, fields[count]);
            count++;
            if (p == end)
                break;
            start = p + 1;
        }
    }
    return count;
}

static int stats_header_column(const char *name, struct stats_columns *c, int index,
                               enum stats_time_kind *kind)
{
    char lower[STATS_TEXT_MAX];
    size_t i;
    for (i = 0; name[i] && i < sizeof lower - 1; i++)
        lower[i] = (char)tolower((unsigned char)name[i]);
    lower[i] = 0;
    if (!strcmp(lower, "value") || !strcmp(lower, "duration") || !strcmp(lower, "latency") ||
        !strcmp(lower, "response_time"))
        c->value = index;
    else if (!strcmp(lower, "interval"))
        c->time = index, *kind = STATS_TIME_INDEX;
    else if (!strcmp(lower, "timestamp") || !strcmp(lower, "time") || !strcmp(lower, "ts"))
        c->time = index, *kind = STATS_TIME_TIMESTAMP;
    else if (!strcmp(lower, "label") || !strcmp(lower, "type") || !strcmp(lower, "request"))
        c->label = index;
    else
        return -1;
    return 0;
}

static int stats_input_push(struct stats_input *in, double value, double time, uint32_t label)
{
    if (in->n == in->cap) {
        size_t cap = in->cap ? in->cap * 2 : 4096;
        double *v = realloc(in->value, sizeof(double) * cap);
        if (!v)
            return -1;
        in->value = v;
        double *t = realloc(in->time, sizeof(double) * cap);
        if (!t)
            return -1;
        in->time = t;
        uint32_t *l = realloc(in->label_id, sizeof(uint32_t) * cap);
        if (!l)
            return -1;
        in->label_id = l;
        in->cap = cap;
    }
    in->value[in->n] = value;
    in->time[in->n] = time;
    in->label_id[in->n] = label;
    in->n++;
    return 0;
}

/* Label id of `text`, interned; UINT32_MAX-1 when there are too many. */
static uint32_t stats_intern(struct stats_input *in, const char *text)
{
    for (size_t i = 0; i < in->nlabels; i++)
        if (!strcmp(in->labels[i], text))
            return (uint32_t)i;
    if (in->nlabels >= STATS_INPUT_MAX_LABELS)
        return UINT32_MAX - 1;
    char **grown = realloc(in->labels, sizeof(char *) * (in->nlabels + 1));
    if (!grown)
        return UINT32_MAX - 1;
    in->labels = grown;
    char *copy = strdup(text);
    if (!copy)
        return UINT32_MAX - 1;
    in->labels[in->nlabels] = copy;
    return (uint32_t)in->nlabels++;
}

#define STATS_REJECT(...)                                                                          \
    do {                                                                                           \
        in->bad++;                                                                                 \
        if (diag && in->bad <= max_messages) {                                                     \
            fprintf(diag, "%s:%zu: ", name, lineno);                                               \
            fprintf(diag, __VA_ARGS__);                                                            \
            fputc('\n', diag);                                                                     \
        }                                                                                          \
        goto next_line;                                                                            \
    } while (0)

int stats_input_parse(const char *buf, size_t len, const char *name, int flags, FILE *diag,
                      size_t max_messages, struct stats_input *in, char *err)
{
    int want_timestamps = (flags & STATS_INPUT_TIMESTAMPS) != 0;
    memset(in, 0, sizeof *in);
    struct stats_columns cols = {-1, -1, -1, 0};
    int format_known = 0, csv = 0;
    size_t lineno = 0, record = 0;
    char fields[STATS_FIELD_MAX][STATS_TEXT_MAX];
    const char *p = buf, *end = buf + len;
    while (p < end) {
        const char *eol = memchr(p, '\n', (size_t)(end - p));
        if (!eol)
            eol = end;
        const char *line = p, *line_end = eol;
        p = eol < end ? eol + 1 : end;
        lineno++;
        if (line_end > line && line_end[-1] == '\r')
            line_end--;
        const char *q = line;
        while (q < line_end && isspace((unsigned char)*q))
            q++;
        if (q == line_end || *q == '#')
            continue;
        int nf = stats_split(line, line_end, fields);
        if (!format_known) {
            format_known = 1;
            csv = nf > 1;
            double probe;
            if (stats_parse_number(fields[0], &probe) && isalpha((unsigned char)fields[0][0])) {
                /* A header line. */
                in->time_kind = STATS_TIME_NONE;
                for (int i = 0; i < nf && i < STATS_FIELD_MAX; i++)
                    if (stats_header_column(fields[i], &cols, i, &in->time_kind)) {
                        snprintf(err, STATS_ERR_LEN,
                                 "%.100s:%zu: unknown column '%.40s' (expected value, "
                                 "interval, timestamp, label)",
                                 name, lineno, fields[i]);
                        stats_input_free(in);
                        return -1;
                    }
                if (cols.value < 0) {
                    snprintf(err, STATS_ERR_LEN, "%.100s:%zu: the header has no 'value' column",
                             name, lineno);
                    stats_input_free(in);
                    return -1;
                }
                cols.count = nf;
                continue;
            }
            cols.value = 0;
            if (csv) {
                cols.time = 1;
                cols.label = nf > 2 ? 2 : -1;
                in->time_kind = want_timestamps ? STATS_TIME_TIMESTAMP : STATS_TIME_INDEX;
            } else {
                in->time_kind = STATS_TIME_NONE;
            }
            cols.count = nf;
        }
        if (nf > STATS_FIELD_MAX || nf < cols.count)
            STATS_REJECT("expected %d fields, found %d", cols.count, nf);
        double value, time = (double)record;
        if (stats_parse_number(fields[cols.value], &value))
            STATS_REJECT("value '%.40s' is not a number", fields[cols.value]);
        if (!isfinite(value))
            STATS_REJECT("value '%.40s' is not finite", fields[cols.value]);
        if (value < 0)
            STATS_REJECT("value %g is negative (durations are >= 0)", value);
        if ((flags & STATS_INPUT_POSITIVE) && value == 0)
            STATS_REJECT("value %g is not positive (the log scale needs values > 0)", value);
        if (cols.time >= 0) {
            const char *t = fields[cols.time];
            if (stats_parse_number(t, &time) || !isfinite(time))
                STATS_REJECT("%s '%.40s' is not a finite number",
                             in->time_kind == STATS_TIME_INDEX ? "interval" : "timestamp", t);
            if (in->time_kind == STATS_TIME_INDEX &&
                (time < 0 || time != floor(time) || time > 1e9))
                STATS_REJECT("interval '%.40s' is not a whole number in 0..1e9", t);
        }
        uint32_t label = STATS_NO_LABEL;
        if (cols.label >= 0) {
            const char *l = fields[cols.label];
            if (!l[0])
                STATS_REJECT("empty label");
            label = stats_intern(in, l);
            if (label == UINT32_MAX - 1)
                STATS_REJECT("more than %d distinct labels", STATS_INPUT_MAX_LABELS);
        }
        if (stats_input_push(in, value, time, label)) {
            snprintf(err, STATS_ERR_LEN, "%.100s:%zu: out of memory", name, lineno);
            stats_input_free(in);
            return -1;
        }
        record++;
    next_line:;
    }
    if (diag && in->bad > max_messages)
        fprintf(diag, "%s: %zu more rejected records not shown\n", name, in->bad - max_messages);
    return 0;
}

void stats_input_free(struct stats_input *in)
{
    free(in->value);
    free(in->time);
    free(in->label_id);
    for (size_t i = 0; i < in->nlabels; i++)
        free(in->labels[i]);
    free(in->labels);
    memset(in, 0, sizeof *in);
}

double stats_parse_duration(const char *s)
{
    char *end;
    double v = strtod(s, &end);
    if (end == s || !isfinite(v) || v <= 0)
        return -1;
    double unit = 1;
    if (!strcmp(end, "") || !strcmp(end, "s"))
        unit = 1;
    else if (!strcmp(end, "m"))
        unit = 60;
    else if (!strcmp(end, "h"))
        unit = 3600;
    else if (!strcmp(end, "d"))
        unit = 86400;
    else if (!strcmp(end, "w"))
        unit = 7 * 86400;
    else
        return -1;
    return isfinite(v * unit) ? v * unit : -1;
}
