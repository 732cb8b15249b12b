/* fuzz_creds.c - fuzz target of the credential parsers: JSON documents
 * (container and instance endpoints, credential_process, GCP token
 * replies and key files), STS XML replies, the INI of AWS config files,
 * and timestamps.  The first byte picks the parser; the rest is its
 * input.
 * Property: a credential comes back complete (key and secret, or a
 * token) or there is an error with a message; no crash, no leak.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <assert.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "common/tfs_err.h"
#include "s3/aws_creds.h"
#include "s3/cred_util.h"
#include "s3/gcp_creds.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_cred(int rc, struct cred *c, const struct tfs_errinfo *ei)
{
	if (rc == TFS_OK) {
		assert(c);
		if (c->kind == CRED_KEYS)
			assert(c->access_key && c->access_key[0] && c->secret_key);
		else
			assert(c->token && c->token[0]);
		cred_put(c);
	} else {
		assert(rc < 0 && !c);
		assert(memchr(ei->message, '\0', sizeof(ei->message)));
	}
}

static void gcp_file(const char *text, size_t len)
{
	struct cred_provider *p = NULL;
	struct tfs_errinfo ei;
	char path[64];
	int fd = memfd_create("fuzz-creds", MFD_CLOEXEC);

	assert(fd >= 0);
	assert(write(fd, text, len) == (ssize_t)len);
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	tfs_errinfo_clear(&ei);
	if (gcp_creds_from_file(path, &p, &ei) == TFS_OK)
		cred_provider_free(p);
	else
		assert(ei.message[0]);
	close(fd);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct tfs_errinfo ei;
	struct cred *c = NULL;
	const char *text = (const char *)data + 1;
	size_t len = size ? size - 1 : 0;
	char *s, *v;
	int rc;

	if (size < 1)
		return 0;
	tfs_errinfo_clear(&ei);
	switch (data[0] % 8) {
	case 0: {
		const char *why = NULL;
		struct cred_json *j = cred_json_parse(text, len, &why);
		int64_t n;
		if (j) {
			(void)cred_json_str(j, "AccessKeyId");
			(void)cred_json_int(j, "expires_in", &n);
			cred_json_free(j);
		} else {
			assert(why);
		}
		break;
	}
	case 1:
		rc = aws_creds_parse_json(text, len, data[0] & 8, &c, &ei);
		check_cred(rc, c, &ei);
		break;
	case 2:
		rc = data[0] & 8 ? aws_creds_parse_session(text, len, &c, &ei)
				 : aws_creds_parse_sts(text, len, &c, &ei);
		check_cred(rc, c, &ei);
		break;
	case 3:
		rc = gcp_creds_parse_token(text, len, 1700000000000, &c, &ei);
		check_cred(rc, c, &ei);
		break;
	case 4:
		s = strndup(text, len);
		assert(s);
		v = aws_config_value(s, data[0] & 8 ? "profile dev" : "default",
				     data[0] & 16 ? "aws_secret_access_key" : "role_arn");
		free(v);
		free(s);
		break;
	case 5: {
		int64_t ms;
		s = strndup(text, len);
		assert(s);
		(void)cred_parse_time(s, &ms);
		free(s);
		break;
	}
	case 6:
		gcp_file(text, len);
		break;
	default: {
		char *jwt = NULL;
		if (gcp_creds_sa_assertion(text, len, 1700000000, &jwt, &ei) == TFS_OK) {
			assert(jwt && strchr(jwt, '.'));
			free(jwt);
		} else {
			assert(!jwt);
		}
	}
	}
	return 0;
}
