/* zeroc/api.h — ZC_API marks what libzeroc exports. The library is built with hidden visibility,
 * so a function is public only if its declaration in include/zeroc/ carries ZC_API (and the
 * test `exported_symbols` fails on any exported symbol without it). */
#ifndef ZEROC_API_H
#define ZEROC_API_H

#define ZC_API __attribute__((visibility("default")))

#endif
