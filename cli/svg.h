/* svg.h — what the commands that draw (analyze, plot) share: tick spacing and XML-escaped text. */
#ifndef ZEROC_CLI_SVG_H
#define ZEROC_CLI_SVG_H

#include <stdio.h>

/* A round tick step (1, 2 or 5 × 10^k) giving about six ticks over range (> 0). */
double svg_nice_step(double range);
/* Writes s to f with &, <, >, " escaped. */
void svg_text(FILE *f, const char *s);

#endif
