/* results_bands.c - a run's bands widened by its CPU ratio's interval (see
 * results_bands.h).
 *
 * Must never: widen a file twice, touch a value, print or exit. */
#include "results_bands.h"

#include <math.h>
#include <string.h>

#include "results_reader.h" /* results_kind_keys */

/* obj[key] as a number >= 0, else 0. */
static double results_bands_num(json_t *obj, const char *key)
{
    json_t *v = json_object_get(obj, key);
    double x = json_is_number(v) ? json_number_value(v) : 0;
    return x > 0 && isfinite(x) ? x : 0;
}

double results_label_cpu_s(json_t *resources, json_t *labels, const char *label)
{
    double inner_cpu = 0, inner_all = 0, cpu = 0, call = 0;
    const char *component, *name;
    json_t *comp, *g;
    json_object_foreach(resources, component, comp)
    {
        json_object_foreach(comp, name, g)
        {
            double blocks = results_bands_num(g, "blocks");
            if (!(blocks > 0))
                continue;
            if (json_object_get(labels, name)) { /* a front-end label */
                if (!strcmp(name, label)) {
                    cpu += results_bands_num(g, "cpu_s") / blocks;
                    call += results_bands_num(g, "call_s") / blocks;
                }
                continue;
            }
            for (int k = 0; k < RESULTS_NKINDS; k++)
                inner_all += results_bands_num(g, results_kind_keys[k]);
            inner_cpu += results_bands_num(g, "cpu_s");
        }
    }
    return cpu + (inner_all > 0 ? call * inner_cpu / inner_all : 0);
}

/* Multiplies a label's band [lo, hi] at key by (1 - down, 1 + up). */
static void results_bands_scale(json_t *lab, const char *key, double down, double up)
{
    json_t *b = json_object_get(lab, key);
    if (!json_is_array(b) || json_array_size(b) != 2 || !json_is_number(json_array_get(b, 0)) ||
        !json_is_number(json_array_get(b, 1)))
        return;
    double lo = json_number_value(json_array_get(b, 0)),
           hi = json_number_value(json_array_get(b, 1));
    json_array_set_new(b, 0, json_real(lo * (1 - down)));
    json_array_set_new(b, 1, json_real(hi * (1 + up)));
}

int results_widen_ratio_bands(json_t *root)
{
    if (!json_is_object(root) || json_is_true(json_object_get(root, "cpu_ratio_in_bands")))
        return 0;
    json_t *ci = json_object_get(root, "cpu_ratio_ci"), *rv = json_object_get(root, "cpu_ratio");
    json_t *labels = json_object_get(root, "labels");
    if (!json_is_array(ci) || json_array_size(ci) != 2 || !json_is_number(rv) ||
        !json_is_object(labels))
        return 0;
    double ratio = json_number_value(rv), lo = json_number_value(json_array_get(ci, 0)),
           hi = json_number_value(json_array_get(ci, 1));
    if (!(ratio > 0) || !(lo > 0) || !(lo <= ratio && ratio <= hi) || !isfinite(hi))
        return 0;
    static const char *const bands[] = {"median_ci_s", "p95_ci_s", "p99_ci_s"};
    json_t *resources = json_object_get(root, "resources");
    const char *name;
    json_t *lab;
    int n = 0;
    json_object_foreach(labels, name, lab)
    {
        double mean = results_bands_num(lab, "mean_s");
        if (!(mean > 0))
            mean = results_bands_num(lab, "median_s");
        if (!(mean > 0))
            continue;
        double f = results_label_cpu_s(resources, labels, name) / mean;
        f = f > 1 ? 1 : f;
        double down = f * (1 - lo / ratio), up = f * (hi / ratio - 1);
        for (size_t m = 0; m < sizeof bands / sizeof bands[0]; m++)
            results_bands_scale(lab, bands[m], down, up);
        json_object_set_new(lab, "cpu_share", json_real(f));
        n++;
    }
    json_object_set_new(root, "cpu_ratio_in_bands", json_true());
    return n;
}
