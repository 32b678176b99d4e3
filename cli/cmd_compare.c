/*
 * loadtrace compare (in progress).
 */
#include "cli/cli_util.h"
#include "cli/commands.h"

#include <stdio.h>

int cmd_compare(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    cli_error("compare", "not implemented yet");
    return 2;
}
