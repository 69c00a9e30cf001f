/* stats_svg.h - SVG drawing of densities and a band for `preplay stats`. */
#ifndef PREPLAY_STATS_SVG_H
#define PREPLAY_STATS_SVG_H

#include "stats.h"

/* d1, low and high may be NULL. Returns -1 with a one-line reason in err
 * when the file fails. */
int stats_svg_write(const char *path, const struct stats_grid *g, const double *d1,
                    const double *d2, const double *low, const double *high, const char *title,
                    char *err, size_t errlen);

#endif
