/* regress_discretize.c - counter values to levels (regress.h): the
 * thesis's 3-level scheme (Foo, Fig. 5-4: medium is the baseline's median
 * +/- one standard deviation, low below, high above) and equal-width
 * binning (Eq. 6-1, 6-2: k = max(1, 2 ln u) bins over the baseline's
 * range, u its distinct values). Boundaries always come from the
 * baseline windows only, never from the target: a target value outside
 * the baseline's range gets a level of its own (below / above), so a
 * shift is never hidden by clamping. Must never read NAN as a level. */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "regress.h"

static int regress_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

void regress_bins_fit(struct regress_bins *b, enum regress_discretization how, const double *x,
                      size_t n)
{
    memset(b, 0, sizeof *b);
    b->how = how;
    b->nlevels = 3; /* 3-level; equal width: 1 bin + below + above */
    b->k = 1;
    double *v = malloc((n ? n : 1) * sizeof *v);
    size_t m = 0;
    for (size_t i = 0; v && i < n; i++)
        if (isfinite(x[i]))
            v[m++] = x[i];
    if (!m) { /* nothing measured: every value is one level, none matches */
        b->lo = b->hi = b->min = b->median = b->max = NAN;
        free(v);
        return;
    }
    qsort(v, m, sizeof *v, regress_cmp_double);
    /* median (numpy's linear interpolation) */
    double pos = 0.5 * (double)(m - 1), med = v[(size_t)pos];
    if ((size_t)pos + 1 < m)
        med += (pos - floor(pos)) * (v[(size_t)pos + 1] - v[(size_t)pos]);
    b->min = v[0];
    b->median = med;
    b->max = v[m - 1];
    if (how == REGRESS_3LEVEL) {
        /* and the sample standard deviation, in units of the largest
         * magnitude: a sum of values near DBL_MAX (finite, as a hostile
         * file may hold) overflowed, and the counter's levels became NAN,
         * "never measured" */
        double scale = fmax(fabs(v[0]), fabs(v[m - 1])), mean = 0, ss = 0;
        if (!(scale > 0))
            scale = 1;
        for (size_t i = 0; i < m; i++)
            mean += v[i] / scale;
        mean /= (double)m;
        for (size_t i = 0; i < m; i++)
            ss += (v[i] / scale - mean) * (v[i] / scale - mean);
        double sd = m > 1 ? scale * sqrt(ss / (double)(m - 1)) : 0;
        /* finite levels: median +- sd may pass DBL_MAX */
        b->lo = fmax(med - sd, -DBL_MAX);
        b->hi = fmin(med + sd, DBL_MAX);
    } else {
        size_t u = 1;
        for (size_t i = 1; i < m; i++)
            u += v[i] != v[i - 1];
        double k = floor(2 * log((double)u));
        b->k = k > 1 ? (int)k : 1;
        b->lo = v[0];
        b->hi = v[m - 1];
        b->nlevels = b->k + 2;
    }
    free(v);
}

int regress_level(const struct regress_bins *b, double v)
{
    if (!isfinite(v))
        return -1;
    if (isnan(b->lo)) /* the baseline never measured it */
        return -1;
    if (b->how == REGRESS_3LEVEL)
        return v < b->lo ? 0 : v > b->hi ? 2 : 1;
    if (v < b->lo)
        return 0;
    if (v > b->hi)
        return b->k + 1;
    double width = (b->hi - b->lo) / b->k;
    if (!(width > 0))
        return 1;
    int bin = (int)floor((v - b->lo) / width);
    return (bin >= b->k ? b->k - 1 : bin) + 1;
}

const char *regress_level_name(const struct regress_bins *b, int level, char *buf, size_t len)
{
    static const char *const three[3] = {"low", "medium", "high"};
    if (b->how == REGRESS_3LEVEL)
        snprintf(buf, len, "%s", level >= 0 && level < 3 ? three[level] : "?");
    else if (level <= 0)
        snprintf(buf, len, "<%.6g", b->lo);
    else if (level > b->k)
        snprintf(buf, len, ">%.6g", b->hi);
    else {
        double width = (b->hi - b->lo) / b->k, from = b->lo + width * (level - 1);
        snprintf(buf, len, level == b->k ? "[%.6g, %.6g]" : "[%.6g, %.6g)", from,
                 level == b->k ? b->hi : from + width);
    }
    return buf;
}
