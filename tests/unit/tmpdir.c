/* tmpdir.c - temporary directories for unit tests (see tmpdir.h). */
#define _XOPEN_SOURCE 700
#include "tmpdir.h"

#include <criterion/criterion.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>

void tmpdir_make(char *buf, size_t n, const char *tag)
{
	cr_assert_lt((size_t)snprintf(buf, n, "/tmp/tierfs-%s-XXXXXX", tag), n);
	cr_assert_not_null(mkdtemp(buf), "mkdtemp %s", buf);
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

int tmpdir_remove(const char *dir)
{
	if (!dir[0])
		return 0;
	if (nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS) != 0) {
		fprintf(stderr, "cleanup of %s failed\n", dir);
		return -1;
	}
	return 0;
}
