/* report_svg.c - chart frame, styles, legend and escaping for the HTML
 * report (report_svg.h). Only drawing: never computes statistics. The
 * style table alternates dark and light colors and pairs each with its own
 * dash and hatch, so series stay apart when printed in grayscale. */
#include <float.h>
#include <math.h>
#include <string.h>

#include "report_svg.h"

static const struct report_style report_styles[REPORT_NSTYLES] = {
    {"#1b3a6b", "", 0},        /* dark blue, solid */
    {"#e6872e", "7 3", 1},     /* light orange, dashed */
    {"#2f7d3b", "2 2", 2},     /* mid green, dotted */
    {"#b9a6d6", "9 3 2 3", 3}, /* light purple, dash-dot */
    {"#7a1f1f", "4 4", 4},     /* dark red */
    {"#9ccfe0", "1 3", 5},     /* pale blue */
    {"#555555", "12 4", 6},    /* gray */
    {"#d6c34a", "5 2 1 2", 7}, /* pale yellow */
};

const struct report_style *report_style(size_t i)
{
    return &report_styles[i % REPORT_NSTYLES];
}

void report_escape(FILE *f, const char *s)
{
    for (; *s; s++)
        switch (*s) {
        case '&':
            fputs("&amp;", f);
            break;
        case '<':
            fputs("&lt;", f);
            break;
        case '>':
            fputs("&gt;", f);
            break;
        case '"':
            fputs("&quot;", f);
            break;
        case '\'':
            fputs("&#39;", f);
            break;
        default:
            if ((unsigned char)*s < 0x20 && *s != '\t')
                fputc(' ', f); /* control bytes are not allowed in XML text */
            else
                fputc(*s, f);
        }
}

double report_nice_step(double range, int target_ticks)
{
    if (!(range > 0) || !isfinite(range))
        return 1;
    double raw = range / target_ticks, mag = pow(10, floor(log10(raw)));
    double r = raw / mag;
    return (r < 1.5 ? 1 : r < 3.5 ? 2 : r < 7.5 ? 5 : 10) * mag;
}

/* Where v falls in [lo, hi] as a fraction (0.5 for an empty range or a
 * NAN), kept in [-1, 2]: in halves, so [-DBL_MAX, DBL_MAX] has a finite
 * span (a file's -1e308..1e308 drew every mark at one place), and a value
 * far outside the range is drawn just outside the plot, never at a
 * coordinate of 300 digits. */
static double report_fraction(double v, double lo, double hi)
{
    double span = hi / 2 - lo / 2;
    if (!(span > 0) || !isfinite(span))
        return 0.5;
    double t = (v / 2 - lo / 2) / span;
    return isnan(t) ? 0.5 : fmin(fmax(t, -1), 2);
}

/* hi - lo for a tick step, DBL_MAX where it overflows. */
static double report_span(double lo, double hi)
{
    double s = hi - lo;
    return isfinite(s) ? s : DBL_MAX;
}

double report_chart_x(const struct report_chart *c, double x)
{
    return c->left + (c->right - c->left) * report_fraction(x, c->xmin, c->xmax);
}

double report_chart_y(const struct report_chart *c, double y)
{
    return c->bottom - (c->bottom - c->top) * report_fraction(y, c->ymin, c->ymax);
}

/* Hatch patterns: 0 solid, then hatches of different directions/densities. */
static void report_patterns(struct report_chart *c)
{
    fprintf(c->f, "<defs>\n");
    for (int i = 0; i < REPORT_NSTYLES; i++) {
        const char *col = report_styles[i].color;
        fprintf(c->f,
                "<pattern id=\"c%d-h%d\" width=\"8\" height=\"8\" patternUnits=\"userSpaceOnUse\">"
                "<rect width=\"8\" height=\"8\" fill=\"%s\" fill-opacity=\"%s\"/>",
                c->id, i, col, i == 0 ? "1" : "0.45");
        switch (i) {
        case 1:
            fprintf(c->f, "<path d=\"M0,8 L8,0\" stroke=\"%s\" stroke-width=\"2\"/>", col);
            break;
        case 2:
            fprintf(c->f, "<path d=\"M2,2 h2 v2 h-2 Z M6,6 h2 v2 h-2 Z\" fill=\"#000\"/>");
            break;
        case 3:
            fprintf(c->f, "<path d=\"M0,0 L8,8 M8,0 L0,8\" stroke=\"#333\" stroke-width=\"1\"/>");
            break;
        case 4:
            fprintf(c->f, "<path d=\"M0,4 H8\" stroke=\"#fff\" stroke-width=\"2\"/>");
            break;
        case 5:
            fprintf(c->f, "<path d=\"M4,0 V8\" stroke=\"#222\" stroke-width=\"1.5\"/>");
            break;
        case 6:
            fprintf(c->f, "<path d=\"M0,0 L8,8\" stroke=\"#fff\" stroke-width=\"2\"/>");
            break;
        case 7:
            fprintf(c->f, "<path d=\"M0,2 H8 M0,6 H8\" stroke=\"#333\" stroke-width=\"1\"/>");
            break;
        default:
            break;
        }
        fprintf(c->f, "</pattern>\n");
    }
    fprintf(c->f, "</defs>\n");
}

void report_fill(struct report_chart *c, const struct report_style *s, char *buf, size_t len)
{
    snprintf(buf, len, "url(#c%d-h%d)", c->id, s->pattern);
}

static void report_tick_label(FILE *f, double v)
{
    if (fabs(v) < 1e-12)
        v = 0;
    fprintf(f, "%g", v);
}

static void report_chart_open(struct report_chart *c, const char *title, const char *xlabel,
                              const char *ylabel, int xcats);

void report_chart_begin(struct report_chart *c, FILE *f, int id, const char *title,
                        const char *xlabel, const char *ylabel, double xmin, double xmax,
                        double ymin, double ymax, int xcats)
{
    memset(c, 0, sizeof *c);
    c->f = f;
    c->id = id;
    c->width = 760;
    c->height = 380;
    c->left = 70;
    c->right = c->width - 20;
    c->top = 40;
    c->bottom = c->height - (xcats == REPORT_X_CATEGORIES ? 80 : 55);
    c->xmin = xmin;
    c->xmax = xmax > xmin ? xmax : xmin + 1;
    c->ymin = ymin;
    c->ymax = ymax > ymin ? ymax : ymin + 1;
    report_chart_open(c, title, xlabel, ylabel, xcats);
}

double report_text_width(const char *s, double font_px)
{
    double em = 0;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if ((*p & 0xC0) == 0x80)
            continue; /* UTF-8 continuation byte */
        if (strchr("iljtf.,:;|!' ()[]/", *p))
            em += 0.4;
        else if ((*p >= 'A' && *p <= 'Z') || strchr("mwMW@%&", *p) || *p >= 0x80)
            em += 0.85;
        else
            em += 0.62;
    }
    return em * font_px;
}

void report_chart_begin_categories(struct report_chart *c, FILE *f, int id, const char *title,
                                   const char *xlabel, const char *ylabel, const char *const *cats,
                                   size_t ncats, double label_gap, double ymin, double ymax)
{
    memset(c, 0, sizeof *c);
    c->f = f;
    c->id = id;
    c->width = 760;
    c->left = 70;
    c->right = c->width - 20;
    c->top = 40;
    c->ncats = ncats ? ncats : 1;
    double slot = (c->right - c->left) / (double)c->ncats, widest = 0;
    for (size_t i = 0; i < ncats; i++)
        widest = fmax(widest, report_text_width(cats[i], 12));
    c->cats_vertical = widest > slot - 6;
    c->cats_max_px = c->cats_vertical ? 320 : slot - 6;
    double room = c->cats_vertical ? fmin(widest, c->cats_max_px) + 8 : 16;
    c->bottom = c->top + 260;
    c->cats_top = c->bottom + label_gap + (c->cats_vertical ? 6 : 16);
    c->height = c->cats_top + room + 30;
    c->xmin = 0;
    c->xmax = (double)c->ncats;
    c->ymin = ymin;
    c->ymax = ymax > ymin ? ymax : ymin + 1;
    report_chart_open(c, title, xlabel, ylabel, REPORT_X_CATEGORIES);
}

int report_text_shorten(const char *text, double font_px, double max_px, char *buf, size_t len)
{
    if (report_text_width(text, font_px) <= max_px)
        return 0;
    snprintf(buf, len, "%s", text);
    size_t keep = strlen(buf);
    while (keep > 0 && report_text_width(buf, font_px) + 3 * 0.4 * font_px > max_px) {
        do
            keep--;
        while (keep > 0 && ((unsigned char)buf[keep] & 0xC0) == 0x80);
        buf[keep] = 0;
    }
    return 1;
}

void report_chart_category(struct report_chart *c, size_t i, const char *text)
{
    double x = c->left + (c->right - c->left) * ((double)i + 0.5) / (double)c->ncats;
    char buf[1024];
    int cut = report_text_shorten(text, 12, c->cats_max_px, buf, sizeof buf);
    if (c->cats_vertical)
        fprintf(c->f,
                "<text class=\"cat\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\" "
                "dominant-baseline=\"middle\" transform=\"rotate(-90 %.1f %.1f)\">",
                x, c->cats_top, x, c->cats_top);
    else
        fprintf(c->f, "<text class=\"cat\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">", x,
                c->cats_top);
    if (cut) {
        fprintf(c->f, "<title>");
        report_escape(c->f, text);
        fprintf(c->f, "</title>");
        report_escape(c->f, buf);
        fprintf(c->f, "...");
    } else
        report_escape(c->f, text);
    fprintf(c->f, "</text>\n");
}

/* The frame: <svg>, title, grid, ticks, axes and axis labels. */
static void report_chart_open(struct report_chart *c, const char *title, const char *xlabel,
                              const char *ylabel, int xcats)
{
    FILE *f = c->f;
    fprintf(f,
            "<svg class=\"chart\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" "
            "height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" role=\"img\" font-family=\"sans-serif\" "
            "font-size=\"12\">\n<title>",
            c->width, c->height, c->width, c->height);
    report_escape(f, title);
    fprintf(f, "</title>\n");
    report_patterns(c);
    fprintf(f, "<rect width=\"100%%\" height=\"100%%\" fill=\"#fff\"/>\n");
    /* the title on one line within the chart: shortened with "..." (bold
     * is ~10% wider than report_text_width's regular estimate); the
     * whole title is the <svg>'s own <title> above */
    char shown[1024];
    fprintf(f, "<text x=\"%.0f\" y=\"22\" font-size=\"15\" font-weight=\"bold\">", c->left);
    if (report_text_shorten(title, 15 * 1.1, c->width - c->left - 10, shown, sizeof shown)) {
        report_escape(f, shown);
        fprintf(f, "...");
    } else
        report_escape(f, title);
    fprintf(f, "</text>\n");
    /* grid and y ticks */
    double ystep = report_nice_step(report_span(c->ymin, c->ymax), 5);
    double y0 = ceil(c->ymin / ystep) * ystep;
    for (int i = 0; i < REPORT_MAX_TICKS; i++) {
        double y = y0 + i * ystep;
        if (!isfinite(y) || !(y <= c->ymax + ystep * 1e-9) || (i && y == y0 + (i - 1) * ystep))
            break;
        double py = report_chart_y(c, y);
        fprintf(f,
                "<path d=\"M%.1f,%.1f H%.1f\" stroke=\"#ddd\"/>"
                "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">",
                c->left, py, c->right, c->left - 6, py + 4);
        report_tick_label(f, y);
        fprintf(f, "</text>\n");
    }
    if (xcats != REPORT_X_CATEGORIES) {
        double xstep = report_nice_step(report_span(c->xmin, c->xmax), 8);
        if (xcats == REPORT_X_INTEGER && xstep < 1)
            xstep = 1;
        double x0 = ceil(c->xmin / xstep) * xstep;
        for (int i = 0; i < REPORT_MAX_TICKS; i++) {
            double x = x0 + i * xstep;
            if (!isfinite(x) || !(x <= c->xmax + xstep * 1e-9) || (i && x == x0 + (i - 1) * xstep))
                break;
            double px = report_chart_x(c, x);
            fprintf(f,
                    "<path d=\"M%.1f,%.1f v5\" stroke=\"#000\"/>"
                    "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">",
                    px, c->bottom, px, c->bottom + 18);
            report_tick_label(f, x);
            fprintf(f, "</text>\n");
        }
    }
    fprintf(f, "<path d=\"M%.1f,%.1f V%.1f H%.1f\" fill=\"none\" stroke=\"#000\"/>\n", c->left,
            c->top, c->bottom, c->right);
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">", (c->left + c->right) / 2,
            c->height - 8);
    report_escape(f, xlabel);
    fprintf(f,
            "</text>\n<text transform=\"translate(16,%.1f) rotate(-90)\" "
            "text-anchor=\"middle\">",
            (c->top + c->bottom) / 2);
    report_escape(f, ylabel);
    fprintf(f, "</text>\n");
}

void report_chart_legend(struct report_chart *c, const char *const *names,
                         const struct report_style *const *styles, const char *kinds, size_t n)
{
    double w = 0;
    for (size_t i = 0; i < n; i++) {
        double tw = report_text_width(names[i], 12);
        w = tw > w ? tw : w;
    }
    w = (w > 260 ? 260 : w) + 44;
    double x = c->right - w - 4, y = c->top + 4;
    fprintf(c->f,
            "<g class=\"legend\"><rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
            "fill=\"#fff\" fill-opacity=\"0.9\" stroke=\"#999\"/>\n",
            x, y, w, 18.0 * (double)n + 6);
    for (size_t i = 0; i < n; i++) {
        double ly = y + 14 + 18.0 * (double)i;
        if (kinds[i] == 'b') {
            char fill[64];
            report_fill(c, styles[i], fill, sizeof fill);
            fprintf(c->f,
                    "<path d=\"M%.1f,%.1f h22 v11 h-22 Z\" fill=\"%s\" stroke=\"#000\" "
                    "stroke-width=\"0.5\"/>",
                    x + 6, ly - 9, fill);
        } else
            fprintf(c->f,
                    "<path d=\"M%.1f,%.1f h22\" stroke=\"%s\" stroke-width=\"2.5\" "
                    "stroke-dasharray=\"%s\"/>",
                    x + 6, ly - 4, styles[i]->color, styles[i]->dash);
        fprintf(c->f, "<text x=\"%.1f\" y=\"%.1f\">", x + 34, ly);
        report_escape(c->f, names[i]);
        fprintf(c->f, "</text>\n");
    }
    fprintf(c->f, "</g>\n");
}

void report_chart_end(struct report_chart *c)
{
    fprintf(c->f, "</svg>\n");
}
