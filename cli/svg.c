/* svg.c — tick spacing and escaped text for the SVG charts (svg.h). */
#include <math.h>

#include "cli/svg.h"

double svg_nice_step(double lo, double hi)
{
    double raw = (hi / 2 - lo / 2) / 3, mag = pow(10, floor(log10(raw))), r = raw / mag;
    return (r <= 1 ? 1 : r <= 2 ? 2 : r <= 5 ? 5 : 10) * mag;
}

void svg_text(FILE *f, const char *s)
{
    for (; *s; s++)
        switch (*s) {
        case '&': fputs("&amp;", f); break;
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '"': fputs("&quot;", f); break;
        default: fputc(*s, f);
        }
}
