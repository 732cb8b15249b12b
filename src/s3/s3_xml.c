/* s3_xml.c - ListObjectsV2 and error-body parsing on libxml2 (see s3_xml.h).
 *
 * Untrusted input: the parser never loads anything (XML_PARSE_NONET, no
 * DTD loading, no entity substitution) and a document that carries a DTD
 * at all is rejected as malformed, so no entity can be declared, let alone
 * expanded.  Inputs are bounded by S3_XML_MAX.
 *
 * Key decoding with encoding-type=url: AWS form-encodes keys (a space
 * becomes '+', a literal '+' becomes "%2B"; botocore decodes with
 * unquote_plus), and radosgw does the same, so '+' decodes to a space and
 * "%XX" to the byte XX.  A '%' not followed by two hex digits is malformed.
 * Which elements are decoded is decided by the reply's EncodingType when
 * present ("url"), else by what the caller asked for.
 */
#include "s3/s3_xml.h"

#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <libxml/parser.h>
#include <libxml/tree.h>

#include "s3/cred_util.h"

#define S3_XML_MAX (16u * 1024 * 1024)

/* libxml2 wants its global state set up once before threads use it. */
static pthread_once_t s3_xml_once = PTHREAD_ONCE_INIT;

static void s3_xml_init_once(void)
{
	xmlInitParser();
}

static bool has_doctype(const char *xml, size_t len)
{
	static const char pat[] = "<!DOCTYPE";

	return memmem(xml, len, pat, sizeof(pat) - 1) != NULL;
}

/* libxml2's generic error handler (stderr by default) still gets some
 * errors that XML_PARSE_NOERROR does not silence, e.g. bad encodings: a
 * hostile reply must not write to the daemon's stderr.  The handler is
 * per thread, so it is set before each parse. */
static void xml_quiet(void *ctx, const char *msg, ...)
{
	(void)ctx;
	(void)msg;
}

xmlDoc *s3_xml_read(const char *xml, size_t len, size_t max, const char *name)
{
	xmlDoc *doc;

	if (!xml || len == 0 || len > max || len > INT_MAX || has_doctype(xml, len))
		return NULL;
	pthread_once(&s3_xml_once, s3_xml_init_once);
	xmlSetGenericErrorFunc(NULL, xml_quiet);
	doc = xmlReadMemory(xml, (int)len, name, NULL,
			    XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING);
	if (doc && (doc->intSubset || doc->extSubset || !xmlDocGetRootElement(doc))) {
		xmlFreeDoc(doc);
		doc = NULL;
	}
	return doc;
}

static xmlDoc *parse_doc(const char *xml, size_t len)
{
	return s3_xml_read(xml, len, S3_XML_MAX, "s3-reply.xml");
}

static bool is_elem(const xmlNode *n, const char *name)
{
	return n->type == XML_ELEMENT_NODE && strcmp((const char *)n->name, name) == 0;
}

static xmlNode *child_elem(const xmlNode *parent, const char *name)
{
	for (xmlNode *n = parent->children; n; n = n->next)
		if (is_elem(n, name))
			return n;
	return NULL;
}

/* Text of parent's first <name> child, or NULL (caller xmlFree()s). */
static char *child_text(const xmlNode *parent, const char *name)
{
	xmlNode *n = child_elem(parent, name);

	return n ? (char *)xmlNodeGetContent(n) : NULL;
}

static int hexval(unsigned char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Copy (and url-decode when decode) src into a new NUL-terminated buffer.
 * TFS_E_PROTO on a bad escape. */
static int dup_key(const char *src, bool decode, char **out, size_t *out_len)
{
	size_t n = strlen(src), o = 0;
	char *p = malloc(n + 1);

	*out = NULL;
	if (!p)
		return TFS_E_NOMEM;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)src[i];

		if (decode && c == '+') {
			c = ' ';
		} else if (decode && c == '%') {
			int hi, lo;

			if (i + 2 >= n) {
				free(p);
				return TFS_E_PROTO;
			}
			hi = hexval((unsigned char)src[i + 1]);
			lo = hi < 0 ? -1 : hexval((unsigned char)src[i + 2]);
			if (lo < 0) {
				free(p);
				return TFS_E_PROTO;
			}
			c = (unsigned char)(hi << 4 | lo);
			i += 2;
		}
		p[o++] = (char)c;
	}
	p[o] = '\0';
	*out = p;
	*out_len = o;
	return TFS_OK;
}

static bool parse_u64(const char *s, uint64_t *out)
{
	uint64_t v = 0;

	if (!s || !*s)
		return false;
	for (; *s; s++) {
		if (*s < '0' || *s > '9')
			return false;
		if (v > (UINT64_MAX - (uint64_t)(*s - '0')) / 10)
			return false;
		v = v * 10 + (uint64_t)(*s - '0');
	}
	*out = v;
	return true;
}

/* "2009-10-12T17:50:30.000Z" (fraction and a "+hh:mm" offset allowed), in
 * seconds since the epoch. */
static bool parse_iso8601(const char *s, int64_t *out)
{
	int64_t ms;

	if (!cred_parse_time(s, &ms))
		return false;
	*out = ms >= 0 ? ms / 1000 : -((-ms + 999) / 1000);
	return true;
}

static int parse_contents(const xmlNode *n, bool decode, bool generations,
			  struct obj_list_entry *e)
{
	char *key = NULL, *size = NULL, *etag = NULL, *mtime = NULL, *gen = NULL;
	int rc = TFS_E_PROTO;

	key = child_text(n, "Key");
	size = child_text(n, "Size");
	etag = child_text(n, "ETag");
	mtime = child_text(n, "LastModified");
	if (!key || !*key || !parse_u64(size, &e->meta.size))
		goto out;
	if (generations)
		gen = child_text(n, "Generation");
	if (gen) {
		size_t gl = strlen(gen);

		if (gl == 0 || gl > 20 || strspn(gen, "0123456789") != gl)
			goto out;
		snprintf(e->meta.etag, sizeof(e->meta.etag), "gen:%s", gen);
	} else if (etag) {
		if (strlen(etag) >= sizeof(e->meta.etag))
			goto out;
		strcpy(e->meta.etag, etag);
	}
	if (mtime && !parse_iso8601(mtime, &e->meta.mtime))
		goto out;
	rc = dup_key(key, decode, &e->key, &e->key_len);
out:
	xmlFree(gen);
	xmlFree(mtime);
	xmlFree(etag);
	xmlFree(size);
	xmlFree(key);
	return rc;
}

int s3_xml_parse_list(const char *xml, size_t len, bool url_encoded,
		      struct obj_list_page **out)
{
	return s3_xml_parse_list_v(xml, len, url_encoded, false, out);
}

int s3_xml_parse_list_v(const char *xml, size_t len, bool url_encoded, bool generations,
			struct obj_list_page **out)
{
	struct obj_list_page *page = NULL;
	xmlDoc *doc = NULL;
	xmlNode *root;
	char *truncated = NULL, *enc = NULL, *token = NULL;
	size_t n_contents = 0, n_prefixes = 0;
	bool decode = url_encoded;
	int rc = TFS_E_PROTO;

	*out = NULL;
	doc = parse_doc(xml, len);
	if (!doc)
		return TFS_E_PROTO;
	root = xmlDocGetRootElement(doc);
	if (!is_elem(root, "ListBucketResult"))
		goto out_doc;

	enc = child_text(root, "EncodingType");
	if (enc) {
		if (strcasecmp(enc, "url") != 0)
			goto out_doc;
		decode = true;
	}
	truncated = child_text(root, "IsTruncated");
	if (!truncated || (strcmp(truncated, "true") && strcmp(truncated, "false")))
		goto out_doc;

	for (xmlNode *n = root->children; n; n = n->next) {
		if (is_elem(n, "Contents"))
			n_contents++;
		else if (is_elem(n, "CommonPrefixes"))
			n_prefixes++;
	}

	rc = TFS_E_NOMEM;
	page = calloc(1, sizeof(*page));
	if (!page)
		goto out_doc;
	if (n_contents && !(page->entries = calloc(n_contents, sizeof(*page->entries))))
		goto out_page;
	if (n_prefixes && !(page->prefixes = calloc(n_prefixes, sizeof(*page->prefixes))))
		goto out_page;

	page->truncated = strcmp(truncated, "true") == 0;
	if (page->truncated) {
		rc = TFS_E_PROTO;
		token = child_text(root, "NextContinuationToken");
		if (!token || !*token)
			goto out_page;
		rc = TFS_E_NOMEM;
		if (!(page->next_token = strdup(token)))
			goto out_page;
	}

	for (xmlNode *n = root->children; n; n = n->next) {
		if (is_elem(n, "Contents")) {
			rc = parse_contents(n, decode, generations, &page->entries[page->n_entries]);
			if (rc)
				goto out_page;
			page->n_entries++;
		} else if (is_elem(n, "CommonPrefixes")) {
			struct obj_list_prefix *p = &page->prefixes[page->n_prefixes];
			char *text = child_text(n, "Prefix");

			rc = text && *text ? dup_key(text, decode, &p->prefix, &p->prefix_len)
					   : TFS_E_PROTO;
			xmlFree(text);
			if (rc)
				goto out_page;
			page->n_prefixes++;
		}
	}
	*out = page;
	page = NULL;
	rc = TFS_OK;
out_page:
	obj_list_page_free(page);
out_doc:
	xmlFree(token);
	xmlFree(truncated);
	xmlFree(enc);
	xmlFreeDoc(doc);
	return rc;
}

/* Copy src into dst (cap bytes), control characters replaced by '?', so a
 * server message cannot forge log lines. */
static void copy_sanitized(char *dst, size_t cap, const char *src)
{
	size_t i = 0;

	for (; src[i] && i + 1 < cap; i++) {
		unsigned char c = (unsigned char)src[i];

		dst[i] = (c < 0x20 || c == 0x7f) ? '?' : (char)c;
	}
	dst[i] = '\0';
}

int s3_xml_parse_error(const char *xml, size_t len, struct tfs_errinfo *ei)
{
	xmlDoc *doc;
	xmlNode *root;
	char *code = NULL, *msg = NULL;
	int rc = TFS_E_PROTO;

	doc = parse_doc(xml, len);
	if (!doc)
		return TFS_E_PROTO;
	root = xmlDocGetRootElement(doc);
	if (!is_elem(root, "Error"))
		goto out;
	code = child_text(root, "Code");
	if (!code || !*code)
		goto out;
	msg = child_text(root, "Message");
	if (!msg || !*msg) {
		/* GCS puts the useful part in <Details> */
		xmlFree(msg);
		msg = child_text(root, "Details");
	}
	if (ei) {
		copy_sanitized(ei->code, sizeof(ei->code), code);
		copy_sanitized(ei->message, sizeof(ei->message), msg ? msg : "");
	}
	rc = TFS_OK;
out:
	xmlFree(msg);
	xmlFree(code);
	xmlFreeDoc(doc);
	return rc;
}

/* S3 error codes with a meaning of their own, whatever the status. */
static const struct {
	const char *code;
	int rc;
	bool retryable;
} s3_codes[] = {
	{ "NoSuchKey", TFS_E_NOENT, false },
	{ "NoSuchVersion", TFS_E_NOENT, false },
	{ "NoSuchBucket", TFS_E_NOBUCKET, false },
	{ "InvalidAccessKeyId", TFS_E_AUTH, false },
	{ "SignatureDoesNotMatch", TFS_E_AUTH, false },
	{ "ExpiredToken", TFS_E_AUTH, false },
	{ "InvalidToken", TFS_E_AUTH, false },
	{ "TokenRefreshRequired", TFS_E_AUTH, false },
	{ "RequestTimeTooSkewed", TFS_E_AUTH, false },
	{ "AccessDenied", TFS_E_ACCESS, false },
	/* Google Cloud Storage's XML API */
	{ "AuthenticationRequired", TFS_E_AUTH, false },
	{ "MissingSecurityHeader", TFS_E_AUTH, false },
	{ "InvalidSecurity", TFS_E_AUTH, false },
	{ "UserProjectMissing", TFS_E_ACCESS, false },
	{ "AllAccessDisabled", TFS_E_ACCESS, false },
	{ "PreconditionFailed", TFS_E_STALE, false },
	{ "InvalidRange", TFS_E_RANGE, false },
	{ "AuthorizationHeaderMalformed", TFS_E_INVAL, false },  /* wrong region */
	{ "PermanentRedirect", TFS_E_INVAL, false },             /* wrong endpoint */
	{ "InvalidBucketName", TFS_E_INVAL, false },
	{ "KeyTooLongError", TFS_E_NAMETOOLONG, false },
	{ "EntityTooLarge", TFS_E_TOOBIG, false },
	{ "SlowDown", TFS_E_IO, true },
	{ "Throttling", TFS_E_IO, true },
	{ "ThrottlingException", TFS_E_IO, true },
	{ "RequestLimitExceeded", TFS_E_IO, true },
	{ "ServiceUnavailable", TFS_E_IO, true },
	{ "InternalError", TFS_E_IO, true },
	{ "RequestTimeout", TFS_E_IO, true },
	{ "XAmzContentSHA256Mismatch", TFS_E_IO, true },  /* body damaged in transit */
	{ "BadDigest", TFS_E_IO, true },
};

int s3_error_map(int http_status, const char *code, bool *retryable)
{
	bool retry = false;
	int rc;

	/* Server-side and throttling statuses are transient whatever the
	 * body says: a 503 must never turn into "no such key". */
	if (http_status >= 500 || http_status == 429 || http_status == 408) {
		rc = TFS_E_IO;
		retry = true;
		goto out;
	}
	if (http_status >= 200 && http_status < 300) {
		rc = TFS_OK;
		goto out;
	}
	if (code && *code) {
		for (size_t i = 0; i < sizeof(s3_codes) / sizeof(s3_codes[0]); i++) {
			if (strcmp(code, s3_codes[i].code) == 0) {
				rc = s3_codes[i].rc;
				retry = s3_codes[i].retryable;
				goto out;
			}
		}
	}
	switch (http_status) {
	case 401: rc = TFS_E_AUTH; break;
	case 403: rc = TFS_E_ACCESS; break;
	case 404: rc = TFS_E_NOENT; break;
	case 412: rc = TFS_E_STALE; break;
	case 416: rc = TFS_E_RANGE; break;
	case 0: rc = TFS_E_PROTO; break;
	default: rc = (http_status >= 400 && http_status < 500) ? TFS_E_INVAL : TFS_E_PROTO;
	}
out:
	if (retryable)
		*retryable = retry;
	return rc;
}
