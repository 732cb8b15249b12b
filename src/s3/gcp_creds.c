/* gcp_creds.c - Google access tokens (see gcp_creds.h for the order).
 *
 * A credentials file is read once, when the provider is made; what each
 * refresh needs from it (the private key, the refresh token) is kept in
 * the source's context and wiped when the provider is freed.  Every reply
 * and request body that holds a secret is wiped before it is freed.
 */
#include "s3/gcp_creds.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"
#include "s3/cred_http.h"
#include "s3/cred_util.h"
#include "s3/jwt.h"

#define METADATA_DEFAULT_HOST "metadata.google.internal"
#define METADATA_TOKEN_PATH "/computeMetadata/v1/instance/service-accounts/default/token"
#define ASSERTION_LIFETIME_S 3600

static const char *env_nonempty(const char *name)
{
	const char *v = getenv(name);

	return v && *v ? v : NULL;
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int gcp_creds_parse_token(const char *json, size_t len, int64_t now, struct cred **out,
			  struct tfs_errinfo *ei)
{
	const char *why, *tok, *type, *err;
	struct cred_json *j;
	int64_t expires_in = 0;
	int rc = TFS_E_PROTO;

	*out = NULL;
	j = cred_json_parse(json, len, &why);
	if (!j) {
		tfs_errinfo_set(ei, "token reply: %s", why);
		return TFS_E_PROTO;
	}
	err = cred_json_str(j, "error");
	if (err) {
		const char *d = cred_json_str(j, "error_description");

		if (ei)
			snprintf(ei->code, sizeof(ei->code), "%.63s", err);
		tfs_errinfo_set(ei, "token endpoint refused: %.60s%s%.160s", err, d ? ": " : "",
				d ? d : "");
		rc = TFS_E_AUTH;
		goto out;
	}
	tok = cred_json_str(j, "access_token");
	type = cred_json_str(j, "token_type");
	if (!tok || !*tok || strpbrk(tok, "\r\n") || strlen(tok) > 8192) {
		tfs_errinfo_set(ei, "token reply without a usable access_token");
		goto out;
	}
	if (type && strcasecmp(type, "Bearer") != 0) {
		tfs_errinfo_set(ei, "token reply: token_type '%.30s', not Bearer", type);
		goto out;
	}
	if (!cred_json_int(j, "expires_in", &expires_in) || expires_in <= 0 ||
	    expires_in > 7 * 86400) {
		tfs_errinfo_set(ei, "token reply without a usable expires_in");
		goto out;
	}
	*out = cred_new_bearer(tok, now + expires_in * 1000);
	rc = *out ? TFS_OK : TFS_E_NOMEM;
out:
	cred_json_free(j);
	return rc;
}

/* http only to loopback: the body carries a signed assertion or a
 * refresh token. */
static bool url_ok(const char *u)
{
	return strncasecmp(u, "https://", 8) == 0 ||
	       (strncasecmp(u, "http://", 7) == 0 && cred_http_url_is_loopback(u));
}

/* POST a form to a token endpoint and parse the reply. */
static int token_post(const char *url, const char *body, struct cred **out,
		      struct tfs_errinfo *ei)
{
	const char *hdrs[] = { "Content-Type: application/x-www-form-urlencoded",
			       "Accept: application/json", NULL };
	struct cred_http_req req = { .method = "POST", .url = url, .headers = hdrs,
				     .body = body, .body_len = strlen(body), .timeout_ms = 10000 };
	struct cred_http_resp resp = { 0 };
	int rc;

	rc = cred_http_do(&req, &resp, ei);
	if (rc)
		return rc;
	rc = gcp_creds_parse_token(resp.body, resp.body_len, now_ms(), out, ei);
	if (ei)
		ei->http_status = (int)resp.status;
	if (rc == TFS_OK && resp.status != 200) {
		cred_put(*out);
		*out = NULL;
		rc = TFS_E_PROTO;
	}
	if (rc == TFS_E_PROTO) {
		char pre[200];

		snprintf(pre, sizeof(pre), "token endpoint %.120s: HTTP %ld", url, resp.status);
		cred_err_prefix(ei, pre);
	}
	else if (rc == TFS_E_AUTH && resp.status >= 500)
		rc = TFS_E_IO;
	cred_http_resp_release(&resp);
	return rc;
}

/* ---- service account ---- */

struct sa {
	char *key_json;              /* the file's text: private key inside */
	size_t key_len;
	char *token_uri;
};

static void sa_free(void *ctx)
{
	struct sa *s = ctx;

	if (!s)
		return;
	cred_wipe_free(s->key_json);
	free(s->token_uri);
	free(s);
}

int gcp_creds_sa_assertion(const char *key_json, size_t len, int64_t now_s, char **out,
			   struct tfs_errinfo *ei)
{
	const char *why, *email, *pem, *kid, *uri;
	char *claims = NULL, *qe = NULL, *qu = NULL;
	struct cred_json *j;
	int rc = TFS_E_INVAL;

	*out = NULL;
	j = cred_json_parse(key_json, len, &why);
	if (!j) {
		tfs_errinfo_set(ei, "service account key: %s", why);
		return TFS_E_INVAL;
	}
	email = cred_json_str(j, "client_email");
	pem = cred_json_str(j, "private_key");
	kid = cred_json_str(j, "private_key_id");
	uri = cred_json_str(j, "token_uri");
	if (!uri)
		uri = GCP_TOKEN_URI_DEFAULT;
	if (!email || !*email || !pem || !*pem) {
		tfs_errinfo_set(ei, "service account key without client_email and private_key");
		goto out;
	}
	qe = cred_json_quote(email);
	qu = cred_json_quote(uri);
	if (!qe || !qu ||
	    asprintf(&claims, "{\"iss\":%s,\"scope\":\"%s\",\"aud\":%s,\"iat\":%lld,\"exp\":%lld}",
		     qe, GCP_SCOPE_READ_ONLY, qu, (long long)now_s,
		     (long long)(now_s + ASSERTION_LIFETIME_S)) < 0) {
		claims = NULL;
		rc = TFS_E_NOMEM;
		goto out;
	}
	rc = jwt_make_rs256(pem, kid, claims, out, ei);
	if (rc == TFS_E_INVAL)
		tfs_errinfo_set(ei, "service account key: private_key is not a PEM RSA key");
out:
	free(claims);
	free(qe);
	free(qu);
	cred_json_free(j);
	return rc;
}

static int sa_fetch(void *ctx, struct cred **out, struct tfs_errinfo *ei)
{
	struct sa *s = ctx;
	char *jwt = NULL, *body = NULL;
	int rc;

	rc = gcp_creds_sa_assertion(s->key_json, s->key_len, now_ms() / 1000, &jwt, ei);
	if (rc)
		return rc;
	{
		const char *pairs[] = { "grant_type", "urn:ietf:params:oauth:grant-type:jwt-bearer",
					"assertion", jwt };

		body = cred_form_encode(pairs, 2);
	}
	rc = body ? token_post(s->token_uri, body, out, ei) : TFS_E_NOMEM;
	cred_wipe_free(body);
	cred_wipe_free(jwt);
	return rc;
}

/* ---- authorized user (refresh token) ---- */

struct au {
	char *client_id, *client_secret, *refresh_token, *token_uri;
};

static void au_free(void *ctx)
{
	struct au *a = ctx;

	if (!a)
		return;
	free(a->client_id);
	cred_wipe_free(a->client_secret);
	cred_wipe_free(a->refresh_token);
	free(a->token_uri);
	free(a);
}

static int au_fetch(void *ctx, struct cred **out, struct tfs_errinfo *ei)
{
	struct au *a = ctx;
	const char *pairs[] = { "grant_type", "refresh_token", "client_id", a->client_id,
				"client_secret", a->client_secret,
				"refresh_token", a->refresh_token };
	char *body = cred_form_encode(pairs, 4);
	int rc;

	rc = body ? token_post(a->token_uri, body, out, ei) : TFS_E_NOMEM;
	cred_wipe_free(body);
	return rc;
}

int gcp_creds_from_file(const char *path, struct cred_provider **out, struct tfs_errinfo *ei)
{
	struct cred_json *j = NULL;
	struct cred_source src = { 0 };
	const char *why, *type, *uri;
	char *text = NULL, desc[600];
	size_t len = 0;
	int rc;

	*out = NULL;
	rc = cred_read_file(path, CRED_FILE_MAX, &text, &len, ei);
	if (rc == TFS_MISS) {
		tfs_errinfo_set(ei, "credentials file %s does not exist", path);
		return TFS_E_INVAL;
	}
	if (rc)
		return rc;
	j = cred_json_parse(text, len, &why);
	if (!j) {
		tfs_errinfo_set(ei, "credentials file %s: %s", path, why);
		rc = TFS_E_INVAL;
		goto out;
	}
	type = cred_json_str(j, "type");
	uri = cred_json_str(j, "token_uri");
	if (!uri || !*uri)
		uri = GCP_TOKEN_URI_DEFAULT;
	rc = TFS_E_INVAL;
	if (!url_ok(uri)) {
		tfs_errinfo_set(ei, "credentials file %s: token_uri must be https (or http to "
				"a loopback address)", path);
		goto out;
	}
	if (type && strcmp(type, "service_account") == 0) {
		struct sa *s = calloc(1, sizeof(*s));
		const char *email = cred_json_str(j, "client_email");
		char *probe = NULL;

		if (!s) {
			rc = TFS_E_NOMEM;
			goto out;
		}
		s->key_json = text;
		s->key_len = len;
		text = NULL;
		s->token_uri = strdup(uri);
		if (!s->token_uri) {
			sa_free(s);
			rc = TFS_E_NOMEM;
			goto out;
		}
		/* sign once now, so a bad key fails the mount with a clear message */
		rc = gcp_creds_sa_assertion(s->key_json, s->key_len, now_ms() / 1000, &probe, ei);
		cred_wipe_free(probe);
		if (rc) {
			char pre[PATH_MAX + 32];

			snprintf(pre, sizeof(pre), "credentials file %s", path);
			cred_err_prefix(ei, pre);
			sa_free(s);
			goto out;
		}
		snprintf(desc, sizeof(desc), "service account %.200s (key file %.200s)",
			 email ? email : "?", path);
		src = (struct cred_source){ .fetch = sa_fetch, .free = sa_free, .ctx = s };
	} else if (type && strcmp(type, "authorized_user") == 0) {
		struct au *a;
		const char *id = cred_json_str(j, "client_id"), *sec = cred_json_str(j, "client_secret");
		const char *rt = cred_json_str(j, "refresh_token");

		if (!id || !*id || !sec || !*sec || !rt || !*rt) {
			tfs_errinfo_set(ei, "credentials file %s: authorized_user without client_id, "
					"client_secret and refresh_token", path);
			goto out;
		}
		a = calloc(1, sizeof(*a));
		if (!a) {
			rc = TFS_E_NOMEM;
			goto out;
		}
		a->client_id = strdup(id);
		a->client_secret = strdup(sec);
		a->refresh_token = strdup(rt);
		a->token_uri = strdup(uri);
		if (!a->client_id || !a->client_secret || !a->refresh_token || !a->token_uri) {
			au_free(a);
			rc = TFS_E_NOMEM;
			goto out;
		}
		snprintf(desc, sizeof(desc), "authorized user (file %.300s)", path);
		src = (struct cred_source){ .fetch = au_fetch, .free = au_free, .ctx = a };
	} else {
		tfs_errinfo_set(ei, "credentials file %s: type '%.40s' is not supported "
				"(service_account or authorized_user)", path, type ? type : "");
		goto out;
	}
	*out = cred_provider_new(desc, &src, NULL);
	rc = *out ? TFS_OK : TFS_E_NOMEM;
out:
	cred_json_free(j);
	if (text) {
		explicit_bzero(text, len);
		free(text);
	}
	return rc;
}

/* ---- metadata server ---- */

struct md {
	char *url;
};

static void md_free(void *ctx)
{
	struct md *m = ctx;

	if (!m)
		return;
	free(m->url);
	free(m);
}

static int md_fetch(void *ctx, struct cred **out, struct tfs_errinfo *ei)
{
	struct md *m = ctx;
	const char *hdrs[] = { "Metadata-Flavor: Google", NULL };
	struct cred_http_req req = { .method = "GET", .url = m->url, .headers = hdrs,
				     .timeout_ms = 5000, .connect_timeout_ms = 2000 };
	struct cred_http_resp resp = { 0 };
	int rc;

	rc = cred_http_do(&req, &resp, ei);
	if (rc)
		return rc;
	if (resp.status != 200) {
		tfs_errinfo_set(ei, "metadata server: HTTP %ld for the default service account's "
				"token", resp.status);
		if (ei)
			ei->http_status = (int)resp.status;
		rc = resp.status == 404 || resp.status == 403 ? TFS_E_AUTH : TFS_E_IO;
	} else {
		rc = gcp_creds_parse_token(resp.body, resp.body_len, now_ms(), out, ei);
		if (rc)
			cred_err_prefix(ei, "metadata server");
	}
	cred_http_resp_release(&resp);
	return rc;
}

static int from_metadata(struct cred_provider **out, struct tfs_errinfo *ei)
{
	const char *host = env_nonempty("GCE_METADATA_HOST");
	struct md *m;
	struct cred *c = NULL;
	struct cred_source src;
	struct tfs_errinfo probe;
	char desc[300];
	int rc;

	if (!host) {
		const char *no = getenv("NO_GCE_CHECK");

		if (no && strcasecmp(no, "true") == 0)
			return TFS_MISS;
		host = METADATA_DEFAULT_HOST;
	}
	if (strpbrk(host, "/?#@ ") || strlen(host) > 200) {
		tfs_errinfo_set(ei, "GCE_METADATA_HOST must be HOST[:PORT]");
		return TFS_E_INVAL;
	}
	m = calloc(1, sizeof(*m));
	if (!m || asprintf(&m->url, "http://%s%s", host, METADATA_TOKEN_PATH) < 0) {
		free(m);
		return TFS_E_NOMEM;
	}
	tfs_errinfo_clear(&probe);
	rc = md_fetch(m, &c, &probe);
	cred_put(c);
	if (rc == TFS_E_CONNECT && !env_nonempty("GCE_METADATA_HOST")) {
		log_info("credentials: no GCE metadata server (%s)", probe.message);
		md_free(m);
		return TFS_MISS;
	}
	if (rc) {
		if (ei)
			*ei = probe;
		md_free(m);
		return rc == TFS_E_NOMEM ? rc : TFS_E_AUTH;
	}
	snprintf(desc, sizeof(desc), "GCE metadata server %.200s (default service account)", host);
	src = (struct cred_source){ .fetch = md_fetch, .free = md_free, .ctx = m };
	*out = cred_provider_new(desc, &src, NULL);
	return *out ? TFS_OK : TFS_E_NOMEM;
}

int gcp_creds_chain(struct cred_provider **out, struct tfs_errinfo *ei)
{
	const char *gac = env_nonempty("GOOGLE_APPLICATION_CREDENTIALS");
	const char *dir = env_nonempty("CLOUDSDK_CONFIG"), *home = env_nonempty("HOME");
	char path[PATH_MAX];

	*out = NULL;
	tfs_errinfo_clear(ei);
	if (gac)
		return gcp_creds_from_file(gac, out, ei);
	path[0] = '\0';
	if (dir)
		snprintf(path, sizeof(path), "%s/application_default_credentials.json", dir);
	else if (home)
		snprintf(path, sizeof(path), "%s/.config/gcloud/application_default_credentials.json",
			 home);
	if (path[0] && access(path, F_OK) == 0)
		return gcp_creds_from_file(path, out, ei);
	return from_metadata(out, ei);
}
