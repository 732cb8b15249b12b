/* cli.h - the tierfs control commands: stats, warm, pin, unpin, evict,
 * residency, trace, epoch, config, ping.  Each is a client of a mount's
 * control socket (docs/control.md); src/main.c hands them over with
 *
 *     if (argc >= 2 && cli_is_command(argv[1]))
 *             return cli_main(argc, argv);
 *
 * Not thread-safe: meant to own the process while it runs (it blocks
 * SIGINT/SIGTERM around warm and stats --watch to cancel cleanly, and
 * writes to stdout/stderr).
 */
#ifndef TIERFS_CLI_H
#define TIERFS_CLI_H

#include <stdbool.h>
#include <stdio.h>

/* Is name one of the control commands above?  (NULL: false.) */
bool cli_is_command(const char *name);

/* Run argv[1] (a command for which cli_is_command() is true) with the
 * arguments after it; argv[0] is the program name.  Returns the process
 * exit status: 0 ok, 1 a failure reported by the daemon or an I/O error,
 * 2 a usage error, 130 when warm was cancelled by SIGINT/SIGTERM.
 * Messages go to stderr, results to stdout. */
int cli_main(int argc, char **argv);

/* Print the usage lines of the control commands to out (for --help). */
void cli_usage(FILE *out);

#endif
