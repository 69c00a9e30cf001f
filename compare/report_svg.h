/* report_svg.h - the small SVG chart kit of the HTML report: a plot area
 * with titled, ticked and labelled axes, a series style table that stays
 * distinguishable in grayscale (lightness steps + dash patterns + fill
 * hatches), a legend, and HTML/XML escaping. Writes text to a FILE; never
 * references anything outside the document (no fonts, no scripts). */
#ifndef PREPLAY_REPORT_SVG_H
#define PREPLAY_REPORT_SVG_H

#include <stdio.h>

struct report_chart {
    FILE *f;
    int id; /* unique per document: prefixes pattern ids */
    double width, height;
    double left, right, top, bottom; /* plot area in pixels */
    double xmin, xmax, ymin, ymax;   /* data range */
    /* category charts (report_chart_begin_categories) */
    size_t ncats;
    int cats_vertical;  /* labels run top to bottom: too wide for their slot */
    double cats_top;    /* baseline (horizontal) or top (vertical) of the labels */
    double cats_max_px; /* longer labels are shortened to this width, with "..." */
};

#define REPORT_NSTYLES 8
struct report_style {
    const char *color; /* stroke/fill; lightness decreases with the index pairs */
    const char *dash;  /* stroke-dasharray, "" = solid */
    int pattern;       /* fill hatch 0..REPORT_NSTYLES-1 */
};
const struct report_style *report_style(size_t i);

/* Writes `s` with &, <, >, " and ' escaped (text and attribute safe). */
void report_escape(FILE *f, const char *s);

/* A "nice" tick step for the range (1, 2 or 5 times a power of ten). */
double report_nice_step(double range, int target_ticks);
/* Ticks an axis draws at most: a range whose step is lost in its values'
 * magnitude (1e308 + 1 == 1e308) ends there instead of looping on one
 * value, writing without end. */
#define REPORT_MAX_TICKS 64

enum report_x_axis {
    REPORT_X_NUMERIC = 0,
    REPORT_X_CATEGORIES = 1, /* no numeric ticks: category charts draw their own */
    REPORT_X_INTEGER = 2,    /* ticks at whole numbers only (interval counts) */
};

/* Opens <svg>: title, axes with ticks and labels, the hatch patterns.
 * xlabel/ylabel carry units ("response time (ms)"); xcats is a
 * report_x_axis. */
void report_chart_begin(struct report_chart *c, FILE *f, int id, const char *title,
                        const char *xlabel, const char *ylabel, double xmin, double xmax,
                        double ymin, double ymax, int xcats);
/* The same for a category axis: the chart grows downwards to fit its
 * category labels, which are horizontal when each fits its slot and
 * vertical otherwise (never clipped at the sides); label_gap is room
 * between the axis and the labels for per-bar marks. */
void report_chart_begin_categories(struct report_chart *c, FILE *f, int id, const char *title,
                                   const char *xlabel, const char *ylabel, const char *const *cats,
                                   size_t ncats, double label_gap, double ymin, double ymax);
/* Category i's label under its slot (the full text as a tooltip when shortened). */
void report_chart_category(struct report_chart *c, size_t i, const char *text);
/* Width in pixels of text at font_px, estimated on the generous side (no
 * fonts are measured: the report loads none). */
double report_text_width(const char *s, double font_px);
/* When text is wider than max_px at font_px: buf gets its longest prefix
 * (whole UTF-8 characters) that still fits with "..." after it, and 1;
 * else 0 and buf untouched. The caller writes the "...". */
int report_text_shorten(const char *text, double font_px, double max_px, char *buf, size_t len);
double report_chart_x(const struct report_chart *c, double x);
double report_chart_y(const struct report_chart *c, double y);
/* A legend box at the top right of the plot: n entries; kinds[i] 'l' for a
 * line sample (dash of style i), 'b' for a filled box (hatch of style i). */
void report_chart_legend(struct report_chart *c, const char *const *names,
                         const struct report_style *const *styles, const char *kinds, size_t n);
void report_chart_end(struct report_chart *c);
/* fill attribute value for style s: url(#pattern) of this chart */
void report_fill(struct report_chart *c, const struct report_style *s, char *buf, size_t len);

#endif
