/* stats_svg.c - draws d1, d2 and d2's confidence band as a self-contained
 * SVG (no scripts, no external references), for `preplay stats pt4cloud
 * --svg`. Only formatting: never computes statistics. */
#include <stdio.h>

#include "out_file.h"
#include "stats_svg.h"

#define SVG_W 720.0
#define SVG_H 360.0
#define SVG_PAD 48.0

static double svg_px(const struct stats_grid *g, int i)
{
    return SVG_PAD + (SVG_W - 2 * SVG_PAD) * ((double)i + 0.5) / g->strips;
}

static double svg_py(double v, double ymax)
{
    return SVG_H - SVG_PAD - (SVG_H - 2 * SVG_PAD) * v / ymax;
}

static void svg_polyline(FILE *f, const struct stats_grid *g, const double *d, double ymax,
                         const char *style)
{
    fprintf(f, "<polyline fill=\"none\" %s points=\"", style);
    for (int i = 0; i < g->strips; i++)
        fprintf(f, "%.1f,%.1f ", svg_px(g, i), svg_py(d[i], ymax));
    fprintf(f, "\"/>\n");
}

int stats_svg_write(const char *path, const struct stats_grid *g, const double *d1,
                    const double *d2, const double *low, const double *high, const char *title,
                    char *err, size_t errlen)
{
    struct out_file o; /* never through a planted link (out_file.h) */
    if (out_file_begin(&o, path, 0644, err, errlen))
        return -1;
    FILE *f = out_file_stream(&o, err, errlen);
    if (!f) {
        out_file_abort(&o);
        return -1;
    }
    double ymax = 0;
    for (int i = 0; i < g->strips; i++) {
        double v = high ? high[i] : d2[i];
        ymax = v > ymax ? v : ymax;
        if (d1 && d1[i] > ymax)
            ymax = d1[i];
    }
    ymax = ymax > 0 ? ymax * 1.05 : 1;
    fprintf(f,
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
            "font-family=\"sans-serif\" font-size=\"12\">\n"
            "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n"
            "<text x=\"%.0f\" y=\"20\">%s</text>\n",
            SVG_W, SVG_H, SVG_PAD, title);
    if (low && high) {
        fprintf(f, "<polygon fill=\"#9ecae1\" fill-opacity=\"0.6\" points=\"");
        for (int i = 0; i < g->strips; i++)
            fprintf(f, "%.1f,%.1f ", svg_px(g, i), svg_py(high[i], ymax));
        for (int i = g->strips - 1; i >= 0; i--)
            fprintf(f, "%.1f,%.1f ", svg_px(g, i), svg_py(low[i], ymax));
        fprintf(f, "\"/>\n");
    }
    if (d1)
        svg_polyline(f, g, d1, ymax, "stroke=\"#d95f02\" stroke-dasharray=\"4 3\"");
    svg_polyline(f, g, d2, ymax, "stroke=\"#08519c\" stroke-width=\"1.5\"");
    double x0 = stats_grid_x(g, 0), x1 = stats_grid_x(g, g->strips - 1);
    fprintf(f,
            "<line x1=\"%.0f\" y1=\"%.0f\" x2=\"%.0f\" y2=\"%.0f\" stroke=\"black\"/>\n"
            "<text x=\"%.0f\" y=\"%.0f\">%.6g</text>\n"
            "<text x=\"%.0f\" y=\"%.0f\" text-anchor=\"end\">%.6g</text>\n"
            "<text x=\"%.0f\" y=\"40\" fill=\"#08519c\">d2 (final)</text>\n"
            "<text x=\"%.0f\" y=\"56\" fill=\"#d95f02\">%s</text>\n"
            "<text x=\"%.0f\" y=\"72\" fill=\"#3182bd\">%s</text>\n</svg>\n",
            SVG_PAD, SVG_H - SVG_PAD, SVG_W - SVG_PAD, SVG_H - SVG_PAD, SVG_PAD,
            SVG_H - SVG_PAD + 16, x0, SVG_W - SVG_PAD, SVG_H - SVG_PAD + 16, x1, SVG_W - 200,
            SVG_W - 200, d1 ? "d1 (before the last interval)" : "", SVG_W - 200,
            low ? "confidence band of d2" : "");
    return out_file_commit(&o, err, errlen);
}
