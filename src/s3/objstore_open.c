/* objstore_open.c - source -> credentials -> backend -> bucket check (see
 * objstore_open.h).  The order matters for messages: a credentials source
 * that fails says so before any request is made, so "the token endpoint
 * refused the key" is never reported as "access denied". */
#include "s3/objstore_open.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "s3/aws_creds.h"
#include "s3/cred_provider.h"
#include "s3/gcp_creds.h"
#include "s3/s3_client.h"
#include "s3/s3_creds.h"

#define GCS_ENDPOINT "https://storage.googleapis.com"

static const char *env_nonempty(const char *name)
{
	const char *v = getenv(name);

	return v && *v ? v : NULL;
}

/* HMAC keys for gs:// (see the header), else Google's chain. */
static int gcs_creds(const char *profile, struct cred_provider **out, struct tfs_errinfo *ei)
{
	const char *envp = env_nonempty("AWS_PROFILE");

	if ((profile && *profile) || envp || env_nonempty("AWS_ACCESS_KEY_ID")) {
		struct s3_creds *sc = NULL;
		struct cred *c;
		char desc[600];
		int rc;

		/* an explicit profile, else the environment, else AWS_PROFILE */
		rc = s3_creds_resolve(profile && *profile ? profile : NULL, &sc, ei);
		if (rc != TFS_OK)
			return rc == TFS_MISS ? TFS_E_INVAL : rc;
		snprintf(desc, sizeof(desc), "HMAC key, %s, key %.4s...", sc->source, sc->access_key);
		c = cred_new_keys(sc->access_key, sc->secret_key, sc->session_token, 0);
		s3_creds_free(sc);
		if (!c)
			return TFS_E_NOMEM;
		*out = cred_provider_new_static(desc, c);
		return *out ? TFS_OK : TFS_E_NOMEM;
	}
	return gcp_creds_chain(out, ei);
}

static void check_error(const struct objstore_source *src, const char *ep, int rc,
			const struct tfs_errinfo *ei, char *err, size_t n)
{
	const char *detail = ei->code[0] ? ei->code : ei->message;

	switch (rc) {
	case TFS_E_AUTH:
		snprintf(err, n, "mount failed: credentials rejected by %s (%s)", ep,
			 detail[0] ? detail : ei->message);
		break;
	case TFS_E_NOBUCKET:
		snprintf(err, n, "mount failed: no such bucket '%s' at %s", src->bucket, ep);
		break;
	case TFS_E_ACCESS:
		snprintf(err, n, "mount failed: access denied to bucket '%s' (%s)", src->bucket,
			 detail);
		break;
	case TFS_E_CONNECT:
		snprintf(err, n, "mount failed: endpoint unreachable: %s (%s)%s", ep,
			 ei->message[0] ? ei->message : tfs_strerror(rc),
			 !src->endpoint && s3_bucket_is_express(src->bucket)
				 ? "; a directory bucket's zonal endpoint is in its region: is the "
				   "region the bucket's?"
				 : "");
		break;
	default:
		snprintf(err, n, "mount failed: %s from %s (%s)", tfs_strerror(rc), ep,
			 detail[0] ? detail : "no detail");
	}
}

int objstore_open(const struct objstore_source *src, struct objstore **out, char *desc,
		  size_t desc_len, char *err, size_t err_len)
{
	bool gcs = src->scheme == OBJSTORE_GCS;
	/* a directory bucket: requests signed with sessions it issues */
	bool express = !gcs && s3_bucket_is_express(src->bucket);
	struct cred_provider *creds = NULL;
	struct s3_client *client = NULL;
	struct tfs_errinfo ei;
	char what[600];
	const char *ep;
	int rc;

	*out = NULL;
	tfs_errinfo_clear(&ei);
	if (desc && desc_len)
		desc[0] = '\0';
	rc = gcs ? gcs_creds(src->profile, &creds, &ei) : aws_creds_chain(src->profile, &creds, &ei);
	if (rc < 0) {
		snprintf(err, err_len, "credentials: %s", ei.message[0] ? ei.message : tfs_strerror(rc));
		return rc;
	}
	snprintf(what, sizeof(what), "%s", creds ? cred_provider_desc(creds)
					       : "none (anonymous requests)");
	if (creds && !src->skip_check) {
		struct cred *c = NULL;

		/* the first fetch now, so that its failure is named as such */
		tfs_errinfo_clear(&ei);
		rc = cred_provider_get(creds, &c, &ei);
		cred_put(c);
		if (rc) {
			snprintf(err, err_len, "credentials: %s: %s", what,
				 ei.message[0] ? ei.message : tfs_strerror(rc));
			cred_provider_free(creds);
			return rc;
		}
	}
	if (express) {
		size_t wl = strlen(what);

		snprintf(what + wl, sizeof(what) - wl, ", S3 Express sessions");
	}
	log_info("credentials: %s", what);
	ep = src->endpoint && *src->endpoint ? src->endpoint : gcs ? GCS_ENDPOINT : NULL;
	{
		struct s3_config sc = {
			.endpoint = ep,
			.region = gcs ? "auto" : src->region,
			.bucket = src->bucket,
			.path_style = gcs || src->path_style,
			.dialect = gcs ? S3_DIALECT_GCS : S3_DIALECT_S3,
			.express = express,
			.express_read_only = src->read_only,
			.creds = creds,              /* the client owns it from here */
			.max_connections = src->max_connections,
			.max_retries = src->max_retries,
			.stall_timeout_ms = src->stall_timeout_ms,
			.connect_timeout_ms = src->connect_timeout_ms,
			.request_timeout_ms = src->request_timeout_ms,
			.adaptive_rate = src->adaptive_rate,
		};

		tfs_errinfo_clear(&ei);
		client = s3_client_new(&sc, &ei);
	}
	if (!client) {
		snprintf(err, err_len, "%s", ei.message[0] ? ei.message : "cannot create the client");
		return TFS_E_INVAL;
	}
	if (!src->skip_check) {
		tfs_errinfo_clear(&ei);
		rc = s3_client_check(client, src->prefix, &ei);
		if (rc != TFS_OK) {
			check_error(src, ep ? ep : "AWS S3", rc, &ei, err, err_len);
			s3_client_free(client);
			return rc;
		}
	}
	if (desc && desc_len)
		snprintf(desc, desc_len, "%s", what);
	*out = s3_client_objstore(client);
	return TFS_OK;
}
