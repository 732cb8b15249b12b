/* aws_creds.c - the AWS credential chain (see aws_creds.h for the order).
 *
 * Each temporary source is a cred_source whose fetch does one exchange
 * (one STS call, one container call, the three IMDSv2 calls, one run of
 * credential_process); the provider decides when and retries.  Every copy
 * of a secret made here (token files, replies, form bodies) is wiped before
 * it is freed, and messages carry endpoints, codes and the server's text,
 * never a token.
 */
#include "s3/aws_creds.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <libxml/parser.h>
#include <libxml/tree.h>

#include "common/log.h"
#include "s3/cred_http.h"
#include "s3/cred_util.h"
#include "s3/s3_creds.h"
#include "s3/s3_xml.h"

#define IMDS_DEFAULT "http://169.254.169.254"
#define ECS_DEFAULT_HOST "http://169.254.170.2"
#define PROCESS_OUT_MAX (64u * 1024)
#define PROCESS_TIMEOUT_MS 60000
#define TOKEN_FILE_MAX (64u * 1024)

extern char **environ;

/* ---- parsers ---- */

static bool env_true(const char *name)
{
	const char *v = getenv(name);

	return v && strcasecmp(v, "true") == 0;
}

static const char *env_nonempty(const char *name)
{
	const char *v = getenv(name);

	return v && *v ? v : NULL;
}

/* First descendant element of n named name (depth-first), or NULL. */
static xmlNode *find_elem(xmlNode *n, const char *name)
{
	for (; n; n = n->next) {
		xmlNode *f;

		if (n->type == XML_ELEMENT_NODE && strcmp((const char *)n->name, name) == 0)
			return n;
		if ((f = find_elem(n->children, name)))
			return f;
	}
	return NULL;
}

static char *elem_text(xmlNode *root, const char *name)
{
	xmlNode *n = find_elem(root, name);
	xmlChar *t;
	char *s;

	if (!n)
		return NULL;
	t = xmlNodeGetContent(n);
	if (!t)
		return NULL;
	s = strdup((const char *)t);
	explicit_bzero(t, strlen((const char *)t));
	xmlFree(t);
	return s ? cred_trim(s) : NULL;
}

/* Credentials in an XML reply: STS's, or S3 Express's CreateSession
 * (`what` names the service in messages). */
static int parse_creds_xml(const char *xml, size_t len, const char *what, struct cred **out,
			   struct tfs_errinfo *ei)
{
	char *ak = NULL, *sk = NULL, *tok = NULL, *exp = NULL, *code = NULL, *msg = NULL;
	int64_t exp_ms = 0;
	xmlDoc *doc = NULL;
	xmlNode *root;
	int rc = TFS_E_PROTO;

	*out = NULL;
	doc = s3_xml_read(xml, len, CRED_HTTP_BODY_MAX, "creds.xml");
	if (!doc || !(root = xmlDocGetRootElement(doc))) {
		tfs_errinfo_set(ei, "%s: reply is not an XML document", what);
		goto out;
	}
	if (strcmp((const char *)root->name, "ErrorResponse") == 0) {
		code = elem_text(root, "Code");
		msg = elem_text(root, "Message");
		if (ei)
			snprintf(ei->code, sizeof(ei->code), "%s", code ? code : "");
		tfs_errinfo_set(ei, "%s refused: %s: %.160s", what, code ? code : "(no code)",
				msg ? msg : "");
		rc = TFS_E_AUTH;
		goto out;
	}
	ak = elem_text(root, "AccessKeyId");
	sk = elem_text(root, "SecretAccessKey");
	tok = elem_text(root, "SessionToken");
	exp = elem_text(root, "Expiration");
	if (!ak || !*ak || !sk || !*sk || !tok || !*tok || !exp) {
		tfs_errinfo_set(ei, "%s: reply without AccessKeyId, SecretAccessKey, SessionToken "
				"and Expiration", what);
		goto out;
	}
	if (!cred_parse_time(exp, &exp_ms)) {
		tfs_errinfo_set(ei, "%s: bad Expiration '%.40s'", what, exp);
		goto out;
	}
	*out = cred_new_keys(ak, sk, tok, exp_ms);
	rc = *out ? TFS_OK : TFS_E_NOMEM;
out:
	cred_wipe_free(ak);
	cred_wipe_free(sk);
	cred_wipe_free(tok);
	free(exp);
	free(code);
	free(msg);
	xmlFreeDoc(doc);
	return rc;
}

int aws_creds_parse_sts(const char *xml, size_t len, struct cred **out, struct tfs_errinfo *ei)
{
	return parse_creds_xml(xml, len, "STS", out, ei);
}

int aws_creds_parse_session(const char *xml, size_t len, struct cred **out,
			    struct tfs_errinfo *ei)
{
	return parse_creds_xml(xml, len, "CreateSession", out, ei);
}

int aws_creds_parse_json(const char *json, size_t len, int allow_no_expiry,
			 struct cred **out, struct tfs_errinfo *ei)
{
	const char *why, *ak, *sk, *tok, *exp, *code;
	struct cred_json *j;
	int64_t exp_ms = 0;
	int64_t ver;
	int rc = TFS_E_PROTO;

	*out = NULL;
	j = cred_json_parse(json, len, &why);
	if (!j) {
		tfs_errinfo_set(ei, "credentials reply: %s", why);
		return TFS_E_PROTO;
	}
	code = cred_json_str(j, "Code");
	if (code && strcmp(code, "Success") != 0) {
		tfs_errinfo_set(ei, "credentials reply: Code %.40s", code);
		rc = TFS_E_AUTH;
		goto out;
	}
	if (cred_json_int(j, "Version", &ver) && ver != 1) {
		tfs_errinfo_set(ei, "credentials reply: unsupported Version %lld", (long long)ver);
		goto out;
	}
	ak = cred_json_str(j, "AccessKeyId");
	sk = cred_json_str(j, "SecretAccessKey");
	tok = cred_json_str(j, "Token");
	if (!tok)
		tok = cred_json_str(j, "SessionToken");
	exp = cred_json_str(j, "Expiration");
	if (!ak || !*ak || !sk || !*sk) {
		tfs_errinfo_set(ei, "credentials reply without AccessKeyId and SecretAccessKey");
		goto out;
	}
	if (exp && !cred_parse_time(exp, &exp_ms)) {
		tfs_errinfo_set(ei, "credentials reply: bad Expiration '%.40s'", exp);
		goto out;
	}
	if (!exp && !allow_no_expiry) {
		tfs_errinfo_set(ei, "credentials reply without Expiration");
		goto out;
	}
	*out = cred_new_keys(ak, sk, tok, exp_ms);
	rc = *out ? TFS_OK : TFS_E_NOMEM;
out:
	cred_json_free(j);
	return rc;
}

char *aws_config_value(const char *text, const char *section, const char *key)
{
	const char *p = text;
	bool in = false;

	while (p && *p) {
		const char *nl = strchr(p, '\n'), *end = nl ? nl : p + strlen(p), *b = p, *e;

		while (b < end && (*b == ' ' || *b == '\t' || *b == '\r'))
			b++;
		e = end;
		while (e > b && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r'))
			e--;
		if (b < e && *b == '[') {
			const char *s = b + 1, *close = memchr(s, ']', (size_t)(e - s));
			size_t sl = strlen(section);

			if (close) {
				while (s < close && (*s == ' ' || *s == '\t'))
					s++;
				const char *se = close;
				size_t k = 0;

				while (se > s && (se[-1] == ' ' || se[-1] == '\t'))
					se--;
				/* "[profile   x]" names profile x, as botocore splits it */
				in = true;
				for (const char *q = s; q < se && in; q++) {
					bool ws = *q == ' ' || *q == '\t';

					if (ws && (q[1] == ' ' || q[1] == '\t'))
						continue;
					in = k < sl && (ws ? section[k] == ' ' : section[k] == *q);
					k++;
				}
				in = in && k == sl;
			} else {
				in = false;
			}
		} else if (in && b < e && *b != '#' && *b != ';') {
			const char *eq = memchr(b, '=', (size_t)(e - b)), *ke;
			size_t kl = strlen(key);

			if (eq) {
				ke = eq;
				while (ke > b && (ke[-1] == ' ' || ke[-1] == '\t'))
					ke--;
				if ((size_t)(ke - b) == kl && strncasecmp(b, key, kl) == 0) {
					const char *v = eq + 1;

					while (v < e && (*v == ' ' || *v == '\t'))
						v++;
					return strndup(v, (size_t)(e - v));
				}
			}
		}
		p = nl ? nl + 1 : NULL;
	}
	return NULL;
}

/* ---- web identity (STS AssumeRoleWithWebIdentity) ---- */

struct webid {
	char *token_file, *role_arn, *session_name, *url;
};

static void webid_free(void *ctx)
{
	struct webid *w = ctx;

	if (!w)
		return;
	free(w->token_file);
	free(w->role_arn);
	free(w->session_name);
	free(w->url);
	free(w);
}

static int webid_fetch(void *ctx, struct cred **out, struct tfs_errinfo *ei)
{
	struct webid *w = ctx;
	struct cred_http_resp resp = { 0 };
	char *tok = NULL, *body = NULL;
	const char *hdrs[] = { "Content-Type: application/x-www-form-urlencoded",
			       "Accept: application/xml", NULL };
	int rc;

	rc = cred_read_file(w->token_file, TOKEN_FILE_MAX, &tok, NULL, ei);
	if (rc == TFS_MISS)
		tfs_errinfo_set(ei, "web identity token file %s does not exist", w->token_file);
	if (rc)
		return rc == TFS_E_NOMEM ? rc : TFS_E_INVAL;
	cred_trim(tok);
	if (!*tok) {
		tfs_errinfo_set(ei, "web identity token file %s is empty", w->token_file);
		rc = TFS_E_INVAL;
		goto out;
	}
	{
		const char *pairs[] = { "Action", "AssumeRoleWithWebIdentity",
					"Version", "2011-06-15",
					"RoleArn", w->role_arn,
					"RoleSessionName", w->session_name,
					"WebIdentityToken", tok };

		body = cred_form_encode(pairs, 5);
	}
	if (!body) {
		rc = TFS_E_NOMEM;
		goto out;
	}
	{
		struct cred_http_req req = { .method = "POST", .url = w->url, .headers = hdrs,
					     .body = body, .body_len = strlen(body),
					     .timeout_ms = 10000 };

		rc = cred_http_do(&req, &resp, ei);
	}
	if (rc)
		goto out;
	rc = aws_creds_parse_sts(resp.body, resp.body_len, out, ei);
	if (rc == TFS_OK && (resp.status < 200 || resp.status >= 300)) {
		cred_put(*out);
		*out = NULL;
		rc = TFS_E_PROTO;
	}
	if (rc && rc != TFS_E_AUTH && resp.status != 200)
		tfs_errinfo_set(ei, "STS at %s answered HTTP %ld", w->url, resp.status);
out:
	cred_http_resp_release(&resp);
	cred_wipe_free(body);
	cred_wipe_free(tok);
	return rc;
}

static char *sts_url(void)
{
	const char *ep = env_nonempty("AWS_ENDPOINT_URL_STS"), *region;
	char *u = NULL;

	if (!ep)
		ep = env_nonempty("AWS_ENDPOINT_URL");
	if (ep)
		return strdup(ep);
	region = env_nonempty("AWS_REGION");
	if (!region)
		region = env_nonempty("AWS_DEFAULT_REGION");
	if (!region)
		return strdup("https://sts.amazonaws.com");
	for (const char *p = region; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '-'))
			return strdup("https://sts.amazonaws.com");
	if (asprintf(&u, "https://sts.%s.amazonaws.com", region) < 0)
		return NULL;
	return u;
}

static int make_webid(const char *token_file, const char *role_arn,
		      struct cred_provider **out, struct tfs_errinfo *ei)
{
	struct webid *w = calloc(1, sizeof(*w));
	const char *sn = env_nonempty("AWS_ROLE_SESSION_NAME");
	char desc[640], sess[64];
	struct cred_source src = { .fetch = webid_fetch, .free = webid_free, .ctx = w };

	if (!w)
		return TFS_E_NOMEM;
	snprintf(sess, sizeof(sess), "tierfs-%ld-%lld", (long)getpid(), (long long)time(NULL));
	w->token_file = strdup(token_file);
	w->role_arn = strdup(role_arn);
	w->session_name = strdup(sn ? sn : sess);
	w->url = sts_url();
	if (!w->token_file || !w->role_arn || !w->session_name || !w->url) {
		webid_free(w);
		return TFS_E_NOMEM;
	}
	snprintf(desc, sizeof(desc), "web identity: role %.200s, token file %.200s, STS %.80s",
		 role_arn, token_file, w->url);
	*out = cred_provider_new(desc, &src, NULL);
	return *out ? TFS_OK : TFS_E_NOMEM;
}

/* ---- container credentials ---- */

struct container {
	char *url, *token_file, *token;
};

static void container_free(void *ctx)
{
	struct container *c = ctx;

	if (!c)
		return;
	free(c->url);
	free(c->token_file);
	cred_wipe_free(c->token);
	free(c);
}

static int container_fetch(void *ctx, struct cred **out, struct tfs_errinfo *ei)
{
	struct container *c = ctx;
	struct cred_http_resp resp = { 0 };
	char *tok = NULL, *hdr = NULL;
	const char *hdrs[3] = { "Accept: application/json", NULL, NULL };
	int rc;

	if (c->token_file) {
		rc = cred_read_file(c->token_file, TOKEN_FILE_MAX, &tok, NULL, ei);
		if (rc == TFS_MISS)
			tfs_errinfo_set(ei, "container authorization token file %s does not exist",
					c->token_file);
		if (rc)
			return rc == TFS_E_NOMEM ? rc : TFS_E_INVAL;
		cred_trim(tok);
	} else if (c->token) {
		tok = strdup(c->token);
		if (!tok)
			return TFS_E_NOMEM;
	}
	if (tok) {
		if (strpbrk(tok, "\r\n")) {
			tfs_errinfo_set(ei, "container authorization token has a line break");
			rc = TFS_E_INVAL;
			goto out;
		}
		if (asprintf(&hdr, "Authorization: %s", tok) < 0) {
			hdr = NULL;
			rc = TFS_E_NOMEM;
			goto out;
		}
		hdrs[1] = hdr;
	}
	{
		struct cred_http_req req = { .method = "GET", .url = c->url, .headers = hdrs,
					     .timeout_ms = 5000 };

		rc = cred_http_do(&req, &resp, ei);
	}
	if (rc)
		goto out;
	if (resp.status != 200) {
		tfs_errinfo_set(ei, "container credentials endpoint %s answered HTTP %ld", c->url,
				resp.status);
		ei->http_status = (int)resp.status;
		rc = resp.status == 401 || resp.status == 403 ? TFS_E_AUTH : TFS_E_IO;
		goto out;
	}
	rc = aws_creds_parse_json(resp.body, resp.body_len, 0, out, ei);
out:
	cred_http_resp_release(&resp);
	cred_wipe_free(hdr);
	cred_wipe_free(tok);
	return rc;
}

/* The SDKs' rule: plain http only to hosts that cannot be elsewhere. */
static bool container_url_ok(const char *u)
{
	if (strncasecmp(u, "https://", 8) == 0)
		return true;
	if (strncasecmp(u, "http://", 7) != 0)
		return false;
	if (cred_http_url_is_loopback(u))
		return true;
	for (const char *h = u + 7, *const allowed[] = { "169.254.170.2", "169.254.170.23",
							  "[fd00:ec2::23]" }, *const *a = allowed;
	     a < allowed + 3; a++) {
		size_t n = strlen(*a);

		if (strncmp(h, *a, n) == 0 && (h[n] == '\0' || h[n] == ':' || h[n] == '/'))
			return true;
	}
	return false;
}

static int make_container(struct cred_provider **out, struct tfs_errinfo *ei)
{
	const char *full = env_nonempty("AWS_CONTAINER_CREDENTIALS_FULL_URI");
	const char *rel = env_nonempty("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI");
	const char *tf = env_nonempty("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE");
	const char *tk = env_nonempty("AWS_CONTAINER_AUTHORIZATION_TOKEN");
	struct container *c = calloc(1, sizeof(*c));
	struct cred_source src = { .fetch = container_fetch, .free = container_free, .ctx = c };
	char desc[512];

	if (!c)
		return TFS_E_NOMEM;
	if (rel) {
		if (rel[0] != '/' || asprintf(&c->url, "%s%s", ECS_DEFAULT_HOST, rel) < 0) {
			c->url = NULL;
			container_free(c);
			tfs_errinfo_set(ei, "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI must start with '/'");
			return TFS_E_INVAL;
		}
	} else {
		if (!container_url_ok(full)) {
			container_free(c);
			tfs_errinfo_set(ei, "AWS_CONTAINER_CREDENTIALS_FULL_URI must be https, or http "
					"to a loopback address or the ECS/EKS agent");
			return TFS_E_INVAL;
		}
		c->url = strdup(full);
	}
	if (tf)
		c->token_file = strdup(tf);
	else if (tk)
		c->token = strdup(tk);
	if (!c->url || (tf && !c->token_file) || (!tf && tk && !c->token)) {
		container_free(c);
		return TFS_E_NOMEM;
	}
	snprintf(desc, sizeof(desc), "container credentials: %.200s%s%.200s", c->url,
		 tf ? ", token file " : tk ? ", token from the environment" : "", tf ? tf : "");
	*out = cred_provider_new(desc, &src, NULL);
	return *out ? TFS_OK : TFS_E_NOMEM;
}

/* ---- EC2 instance profile (IMDSv2) ---- */

struct imds {
	char *base;
	unsigned timeout_ms;
};

static void imds_free(void *ctx)
{
	struct imds *m = ctx;

	if (!m)
		return;
	free(m->base);
	free(m);
}

static int imds_call(struct imds *m, const char *method, const char *path, const char *hdr,
		     struct cred_http_resp *resp, struct tfs_errinfo *ei)
{
	const char *hdrs[] = { hdr, NULL };
	char url[1024];
	int rc;

	snprintf(url, sizeof(url), "%s%s", m->base, path);
	{
		struct cred_http_req req = { .method = method, .url = url, .headers = hdrs,
					     .body = strcmp(method, "PUT") == 0 ? "" : NULL,
					     .timeout_ms = m->timeout_ms * 3,
					     .connect_timeout_ms = m->timeout_ms };

		rc = cred_http_do(&req, resp, ei);
	}
	if (rc == TFS_OK && resp->status != 200) {
		tfs_errinfo_set(ei, "IMDS %s %s: HTTP %ld", method, path, resp->status);
		ei->http_status = (int)resp->status;
		rc = resp->status == 401 || resp->status == 403 ? TFS_E_AUTH
		     : resp->status == 404 ? TFS_E_NOENT : TFS_E_IO;
		cred_http_resp_release(resp);
	}
	return rc;
}

static int imds_fetch(void *ctx, struct cred **out, struct tfs_errinfo *ei)
{
	static const char creds_path[] = "/latest/meta-data/iam/security-credentials/";
	struct imds *m = ctx;
	struct cred_http_resp tr = { 0 }, lr = { 0 }, cr = { 0 };
	char *th = NULL, path[512], *role;
	int rc;

	rc = imds_call(m, "PUT", "/latest/api/token",
		       "X-aws-ec2-metadata-token-ttl-seconds: 21600", &tr, ei);
	if (rc)
		goto out;
	cred_trim(tr.body);
	if (!*tr.body || strpbrk(tr.body, "\r\n") || tr.body_len > 4096) {
		tfs_errinfo_set(ei, "IMDS: bad session token");
		rc = TFS_E_PROTO;
		goto out;
	}
	if (asprintf(&th, "X-aws-ec2-metadata-token: %s", tr.body) < 0) {
		th = NULL;
		rc = TFS_E_NOMEM;
		goto out;
	}
	rc = imds_call(m, "GET", creds_path, th, &lr, ei);
	if (rc == TFS_E_NOENT)
		tfs_errinfo_set(ei, "IMDS: this instance has no IAM role");
	if (rc)
		goto out;
	role = cred_trim(lr.body);
	role[strcspn(role, "\r\n")] = '\0';
	if (!*role || strlen(role) > 128 || strpbrk(role, "/?#% ")) {
		tfs_errinfo_set(ei, "IMDS: bad role name");
		rc = TFS_E_PROTO;
		goto out;
	}
	snprintf(path, sizeof(path), "%s%s", creds_path, role);
	rc = imds_call(m, "GET", path, th, &cr, ei);
	if (rc)
		goto out;
	rc = aws_creds_parse_json(cr.body, cr.body_len, 0, out, ei);
out:
	cred_http_resp_release(&tr);
	cred_http_resp_release(&lr);
	cred_http_resp_release(&cr);
	cred_wipe_free(th);
	return rc;
}

/* TFS_MISS when IMDS cannot be reached (not on EC2). */
static int make_imds(struct cred_provider **out, struct tfs_errinfo *ei)
{
	const char *ep = env_nonempty("AWS_EC2_METADATA_SERVICE_ENDPOINT");
	const char *to = env_nonempty("AWS_METADATA_SERVICE_TIMEOUT");
	struct imds *m = calloc(1, sizeof(*m));
	struct cred_source src = { .fetch = imds_fetch, .free = imds_free, .ctx = m };
	struct cred *c = NULL;
	struct tfs_errinfo probe;
	char desc[256];
	size_t n;
	int rc;

	if (!m)
		return TFS_E_NOMEM;
	m->timeout_ms = 1000;
	if (to) {
		long v = atol(to);

		if (v >= 1 && v <= 60)
			m->timeout_ms = (unsigned)v * 1000;
	}
	m->base = strdup(ep ? ep : IMDS_DEFAULT);
	if (!m->base) {
		imds_free(m);
		return TFS_E_NOMEM;
	}
	n = strlen(m->base);
	while (n && m->base[n - 1] == '/')
		m->base[--n] = '\0';
	/* Probe first: no answer at all from the default address means we
	 * are not on EC2.  An endpoint set on purpose must work. */
	tfs_errinfo_clear(&probe);
	rc = imds_fetch(m, &c, &probe);
	cred_put(c);
	if (rc == TFS_E_CONNECT && !ep) {
		log_info("credentials: no EC2 instance metadata service (%s)", probe.message);
		imds_free(m);
		return TFS_MISS;
	}
	if (rc) {
		if (ei)
			*ei = probe;
		imds_free(m);
		return rc == TFS_E_NOMEM ? rc : TFS_E_AUTH;
	}
	snprintf(desc, sizeof(desc), "EC2 instance profile (IMDSv2 at %.200s)", m->base);
	*out = cred_provider_new(desc, &src, NULL);
	return *out ? TFS_OK : TFS_E_NOMEM;
}

/* ---- credential_process ---- */

struct process {
	char *command;
};

static void process_free(void *ctx)
{
	struct process *p = ctx;

	if (!p)
		return;
	free(p->command);
	free(p);
}

static int64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int process_fetch(void *ctx, struct cred **out, struct tfs_errinfo *ei)
{
	struct process *p = ctx;
	posix_spawn_file_actions_t fa;
	char *argv[] = { "/bin/sh", "-c", p->command, NULL };
	char *buf = NULL;
	size_t len = 0;
	int pfd[2], rc = TFS_E_IO, ws = 0;
	int64_t deadline = mono_ms() + PROCESS_TIMEOUT_MS;
	bool over = false, timed_out = false;
	pid_t pid;

	if (pipe2(pfd, O_CLOEXEC) != 0) {
		tfs_errinfo_set(ei, "credential_process: pipe: %s", strerror(errno));
		return TFS_E_IO;
	}
	buf = malloc(PROCESS_OUT_MAX + 1);
	if (!buf || posix_spawn_file_actions_init(&fa) != 0) {
		free(buf);
		close(pfd[0]);
		close(pfd[1]);
		return TFS_E_NOMEM;
	}
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_adddup2(&fa, pfd[1], 1);
	rc = posix_spawn(&pid, "/bin/sh", &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	close(pfd[1]);
	if (rc != 0) {
		tfs_errinfo_set(ei, "credential_process: cannot run /bin/sh: %s", strerror(rc));
		close(pfd[0]);
		free(buf);
		return TFS_E_IO;
	}
	for (;;) {
		struct pollfd pf = { .fd = pfd[0], .events = POLLIN };
		int64_t left = deadline - mono_ms();
		ssize_t r;

		if (left <= 0) {
			timed_out = true;
			break;
		}
		if (poll(&pf, 1, (int)left) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (pf.revents == 0)
			continue;
		r = read(pfd[0], buf + len, PROCESS_OUT_MAX - len);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		len += (size_t)r;
		if (len == PROCESS_OUT_MAX) {
			over = true;
			break;
		}
	}
	close(pfd[0]);
	if (timed_out || over)
		kill(pid, SIGKILL);
	while (waitpid(pid, &ws, 0) < 0 && errno == EINTR)
		;
	buf[len] = '\0';
	if (timed_out) {
		tfs_errinfo_set(ei, "credential_process: no answer in %d s", PROCESS_TIMEOUT_MS / 1000);
		rc = TFS_E_IO;
	} else if (over) {
		tfs_errinfo_set(ei, "credential_process: more than %u bytes of output", PROCESS_OUT_MAX);
		rc = TFS_E_TOOBIG;
	} else if (!WIFEXITED(ws) || WEXITSTATUS(ws) != 0) {
		tfs_errinfo_set(ei, "credential_process: the command failed (status %d)",
				WIFEXITED(ws) ? WEXITSTATUS(ws) : 128 + WTERMSIG(ws));
		rc = TFS_E_AUTH;
	} else {
		rc = aws_creds_parse_json(buf, len, 1, out, ei);
		if (rc)
			cred_err_prefix(ei, "credential_process");
	}
	explicit_bzero(buf, len);
	free(buf);
	return rc;
}

/* The credential_process of profile in the shared config file, or NULL. */
static char *config_process(const char *profile, char *path_out, size_t path_n)
{
	const char *env = env_nonempty("AWS_CONFIG_FILE"), *home = env_nonempty("HOME");
	char section[300], *text = NULL, *cmd;

	if (env)
		snprintf(path_out, path_n, "%s", env);
	else if (home)
		snprintf(path_out, path_n, "%s/.aws/config", home);
	else
		return NULL;
	if (cred_read_file(path_out, CRED_FILE_MAX, &text, NULL, NULL) != TFS_OK)
		return NULL;
	snprintf(section, sizeof(section), "profile %s", profile);
	cmd = aws_config_value(text, section, "credential_process");
	if (!cmd && strcmp(profile, "default") == 0)
		cmd = aws_config_value(text, "default", "credential_process");
	cred_wipe_free(text);
	if (cmd && !*cred_trim(cmd)) {
		free(cmd);
		cmd = NULL;
	}
	return cmd;
}

static int make_process(char *cmd, const char *profile, const char *path,
			struct cred_provider **out, struct tfs_errinfo *ei)
{
	struct process *p = calloc(1, sizeof(*p));
	struct cred_source src = { .fetch = process_fetch, .free = process_free, .ctx = p };
	char desc[512];

	if (!p) {
		free(cmd);
		return TFS_E_NOMEM;
	}
	p->command = cmd;
	/* the command line itself may name a secret: not shown */
	snprintf(desc, sizeof(desc), "credential_process of profile '%.100s' in %.300s", profile,
		 path);
	*out = cred_provider_new(desc, &src, NULL);
	return *out ? TFS_OK : TFS_E_NOMEM;
}

/* ---- the chain ---- */

static int from_static(struct s3_creds *sc, struct cred_provider **out)
{
	char desc[600];
	struct cred *c = cred_new_keys(sc->access_key, sc->secret_key, sc->session_token, 0);

	snprintf(desc, sizeof(desc), "%s, key %.4s...", sc->source, sc->access_key);
	s3_creds_free(sc);
	if (!c)
		return TFS_E_NOMEM;
	*out = cred_provider_new_static(desc, c);
	return *out ? TFS_OK : TFS_E_NOMEM;
}

/* Profile from the credentials file, else its credential_process. */
static int from_profile(const char *profile, bool explicit_profile, struct cred_provider **out,
			struct tfs_errinfo *ei)
{
	struct s3_creds *sc = NULL;
	char path[PATH_MAX], *cmd;
	int rc;

	rc = s3_creds_resolve(explicit_profile ? profile : NULL, &sc, ei);
	if (rc == TFS_OK)
		return from_static(sc, out);
	cmd = config_process(profile, path, sizeof(path));
	if (cmd) {
		tfs_errinfo_clear(ei);
		return make_process(cmd, profile, path, out, ei);
	}
	return rc;
}

int aws_creds_chain(const char *profile, struct cred_provider **out, struct tfs_errinfo *ei)
{
	const char *tf, *arn, *envp;
	int rc;

	*out = NULL;
	tfs_errinfo_clear(ei);
	if (profile && *profile)
		return from_profile(profile, true, out, ei);

	if (env_nonempty("AWS_ACCESS_KEY_ID")) {
		struct s3_creds *sc = NULL;

		rc = s3_creds_resolve(NULL, &sc, ei);
		return rc == TFS_OK ? from_static(sc, out) : rc;
	}
	tf = env_nonempty("AWS_WEB_IDENTITY_TOKEN_FILE");
	arn = env_nonempty("AWS_ROLE_ARN");
	if (tf || arn) {
		if (!tf || !arn) {
			tfs_errinfo_set(ei, "web identity needs both AWS_WEB_IDENTITY_TOKEN_FILE and "
					"AWS_ROLE_ARN");
			return TFS_E_INVAL;
		}
		return make_webid(tf, arn, out, ei);
	}
	envp = env_nonempty("AWS_PROFILE");
	rc = from_profile(envp ? envp : "default", envp != NULL, out, ei);
	if (rc != TFS_MISS)
		return rc;
	if (env_nonempty("AWS_CONTAINER_CREDENTIALS_FULL_URI") ||
	    env_nonempty("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI"))
		return make_container(out, ei);
	if (env_true("AWS_EC2_METADATA_DISABLED"))
		return TFS_MISS;
	return make_imds(out, ei);
}
