/* tmpdir.h - a private temporary directory for a unit test, and its
 * removal with everything below it (never following a symlink out). */
#ifndef TIERFS_TEST_TMPDIR_H
#define TIERFS_TEST_TMPDIR_H

#include <stddef.h>

/* Make /tmp/tierfs-TAG-XXXXXX (mode 0700) into buf (n bytes); the test
 * fails when it cannot. */
void tmpdir_make(char *buf, size_t n, const char *tag);
/* Remove dir and everything below it; "" is a no-op.  0, or -1 (and a
 * line on stderr) when something was left. */
int tmpdir_remove(const char *dir);

#endif
