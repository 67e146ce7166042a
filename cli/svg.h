/* svg.h — what the commands that draw (analyze, plot) share: tick spacing and XML-escaped text. */
#ifndef ZEROC_CLI_SVG_H
#define ZEROC_CLI_SVG_H

#include <stdio.h>

/* A round tick step (1, 2 or 5 × 10^k) giving about six ticks over [lo, hi] (finite, hi - lo
 * at least 1e-300), computed from half the span, which a double always holds. */
double svg_nice_step(double lo, double hi);
/* Writes s to f with &, <, >, " escaped, and each invalid UTF-8 sequence or character XML 1.0
 * does not allow (control characters other than tab, newline and carriage return; U+FFFE,
 * U+FFFF) replaced by U+FFFD, so the SVG stays well-formed whatever bytes s holds. */
void svg_text(FILE *f, const char *s);

#endif
