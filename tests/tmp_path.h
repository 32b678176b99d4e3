/*
 * For tests: a path in the test's own scratch directory ($LT_TMP, which
 * ctest sets per folder; /tmp without it). The last four returned stay
 * valid, so a test may hold an input and an output path at once.
 */
#ifndef LT_TESTS_TMP_PATH_H
#define LT_TESTS_TMP_PATH_H

#include <stdio.h>
#include <stdlib.h>

static char *tmp_path(const char *name)
{
    static char buf[4][512];
    static int k;
    const char *dir = getenv("LT_TMP");
    char *p = buf[k++ % 4];
    snprintf(p, 512, "%s/%s", dir ? dir : "/tmp", name);
    return p;
}

#endif
