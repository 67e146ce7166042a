/* check.h — the tests' assertion: CHECK(cond, fmt, ...) records a failure with file:line and a
 * message and carries on; check_summary() prints "N passed, N failed" and gives the exit code. */
#ifndef ZEROC_TESTS_CHECK_H
#define ZEROC_TESTS_CHECK_H
#include <stdio.h>

static int check_passed, check_failed;

#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        if (cond) {                                                                                \
            check_passed++;                                                                        \
        } else {                                                                                   \
            check_failed++;                                                                        \
            fprintf(stderr, "%s:%d: FAIL: ", __FILE__, __LINE__);                                  \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fputc('\n', stderr);                                                                   \
        }                                                                                          \
    } while (0)

static inline int check_summary(void)
{
    printf("%d passed, %d failed\n", check_passed, check_failed);
    return check_failed ? 1 : 0;
}
#endif
