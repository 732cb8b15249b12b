/* test_tfs_err.c - the error type: text, errno mapping, errinfo reset. */
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>

#include "common/tfs_err.h"

static const int all_codes[] = {
	TFS_OK, TFS_MISS, TFS_AGAIN, TFS_E_NOENT, TFS_E_ACCESS, TFS_E_AUTH,
	TFS_E_STALE, TFS_E_IO, TFS_E_NOMEM, TFS_E_INVAL, TFS_E_CONNECT,
	TFS_E_PROTO, TFS_E_RANGE, TFS_E_NOSPC, TFS_E_ROFS, TFS_E_NOBUCKET,
	TFS_E_TOOBIG, TFS_E_ISDIR, TFS_E_NOTDIR, TFS_E_NAMETOOLONG,
};
#define N_CODES (sizeof(all_codes) / sizeof(all_codes[0]))

Test(tfs_err, every_code_has_its_own_text)
{
	for (size_t i = 0; i < N_CODES; i++) {
		const char *t = tfs_strerror(all_codes[i]);

		cr_assert_not_null(t);
		cr_assert_str_neq(t, "unknown error", "code %d has no text", all_codes[i]);
		for (size_t j = 0; j < i; j++)
			cr_assert_str_neq(t, tfs_strerror(all_codes[j]), "codes %d and %d share text",
					  all_codes[i], all_codes[j]);
	}
	cr_assert_str_eq(tfs_strerror(-9999), "unknown error");
	cr_assert_str_eq(tfs_strerror(9999), "unknown error");
}

Test(tfs_err, errno_mapping)
{
	cr_assert_eq(tfs_err_to_errno(TFS_OK), 0);
	cr_assert_eq(tfs_err_to_errno(TFS_MISS), 0);
	cr_assert_eq(tfs_err_to_errno(TFS_AGAIN), 0);
	cr_assert_eq(tfs_err_to_errno(TFS_E_NOENT), ENOENT);
	cr_assert_eq(tfs_err_to_errno(TFS_E_NOBUCKET), ENOENT);
	cr_assert_eq(tfs_err_to_errno(TFS_E_ACCESS), EACCES);
	cr_assert_eq(tfs_err_to_errno(TFS_E_AUTH), EACCES);
	cr_assert_eq(tfs_err_to_errno(TFS_E_STALE), ESTALE);
	cr_assert_eq(tfs_err_to_errno(TFS_E_IO), EIO);
	cr_assert_eq(tfs_err_to_errno(TFS_E_CONNECT), EIO);
	cr_assert_eq(tfs_err_to_errno(TFS_E_PROTO), EIO);
	cr_assert_eq(tfs_err_to_errno(TFS_E_NOMEM), ENOMEM);
	cr_assert_eq(tfs_err_to_errno(TFS_E_INVAL), EINVAL);
	cr_assert_eq(tfs_err_to_errno(TFS_E_RANGE), EINVAL);
	cr_assert_eq(tfs_err_to_errno(TFS_E_NOSPC), ENOSPC);
	cr_assert_eq(tfs_err_to_errno(TFS_E_ROFS), EROFS);
	cr_assert_eq(tfs_err_to_errno(TFS_E_TOOBIG), EFBIG);
	cr_assert_eq(tfs_err_to_errno(TFS_E_ISDIR), EISDIR);
	cr_assert_eq(tfs_err_to_errno(TFS_E_NOTDIR), ENOTDIR);
	cr_assert_eq(tfs_err_to_errno(TFS_E_NAMETOOLONG), ENAMETOOLONG);
	cr_assert_eq(tfs_err_to_errno(-9999), EIO);
	/* every failure maps to a positive errno */
	for (size_t i = 0; i < N_CODES; i++)
		if (all_codes[i] < 0)
			cr_assert_gt(tfs_err_to_errno(all_codes[i]), 0);
}

Test(tfs_err, errinfo_clear)
{
	struct tfs_errinfo ei;

	memset(&ei, 'x', sizeof(ei));
	tfs_errinfo_clear(&ei);
	cr_assert_eq(ei.http_status, 0);
	cr_assert_str_eq(ei.code, "");
	cr_assert_str_eq(ei.message, "");
	tfs_errinfo_clear(NULL);   /* must not crash */
}
