/* info_counters.c - the summary of a .counters file for `preplay info`
 * (info_counters.h), through formats/trace_counters.h. Must never print
 * anything but the summary it is asked for. */
#include "info_counters.h"

#include <math.h>
#include <stdio.h>

#include "trace_counters.h"

json_t *info_counters_json(const char *path, char *err, size_t errlen)
{
    struct trace_counters_file f;
    if (trace_counters_read(path, &f, err, errlen) != 0)
        return NULL;
    json_t *o = json_object(), *list = json_array();
    json_object_set_new(o, "file", json_string(path));
    json_object_set_new(o, "host", json_string(f.host));
    json_object_set_new(o, "windows", json_integer((json_int_t)f.nwindows));
    json_object_set_new(o, "window_s", json_real(f.window_s));
    json_object_set_new(o, "tick_s", json_real(f.tick_s));
    double span = 0;
    for (size_t w = 0; w < f.nwindows; w++)
        span += (double)f.windows[w].length_ns / 1e9;
    json_object_set_new(o, "span_s", json_real(span));
    for (size_t k = 0; k < f.nnames; k++) {
        double sum = 0, lo = INFINITY, hi = -INFINITY;
        size_t n = 0;
        for (size_t w = 0; w < f.nwindows; w++) {
            double v = f.windows[w].values[k];
            if (isnan(v))
                continue;
            sum += v;
            lo = fmin(lo, v);
            hi = fmax(hi, v);
            n++;
        }
        json_t *c = json_object();
        json_object_set_new(c, "name", json_string(f.names[k]));
        json_object_set_new(c, "measured", json_integer((json_int_t)n));
        json_object_set_new(c, "mean", n ? json_real(sum / (double)n) : json_null());
        json_object_set_new(c, "min", n ? json_real(lo) : json_null());
        json_object_set_new(c, "max", n ? json_real(hi) : json_null());
        json_array_append_new(list, c);
    }
    json_object_set_new(o, "counters", list);
    trace_counters_file_free(&f);
    return o;
}

void info_counters_print(json_t *c)
{
    printf("counters %s: %" JSON_INTEGER_FORMAT " windows of %g s over %.1f s (host %s)\n",
           json_string_value(json_object_get(c, "file")),
           json_integer_value(json_object_get(c, "windows")),
           json_real_value(json_object_get(c, "window_s")),
           json_real_value(json_object_get(c, "span_s")),
           json_string_value(json_object_get(c, "host")));
    size_t i;
    json_t *k;
    json_array_foreach(json_object_get(c, "counters"), i, k)
    {
        json_t *mean = json_object_get(k, "mean");
        if (json_is_null(mean)) {
            printf("  %-24s never measured\n", json_string_value(json_object_get(k, "name")));
            continue;
        }
        printf("  %-24s mean %-12.4g min %-12.4g max %.4g\n",
               json_string_value(json_object_get(k, "name")), json_real_value(mean),
               json_real_value(json_object_get(k, "min")),
               json_real_value(json_object_get(k, "max")));
    }
}
