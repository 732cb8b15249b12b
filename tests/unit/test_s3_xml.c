/* test_s3_xml.c - ListObjectsV2 and error-body parsing, error mapping. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "s3/s3_xml.h"

#define NS "xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\""
#define HEAD "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<ListBucketResult " NS ">"

static int parse(const char *xml, bool url, struct obj_list_page **page)
{
	return s3_xml_parse_list(xml, strlen(xml), url, page);
}

static void assert_proto(const char *xml, bool url)
{
	struct obj_list_page *page = (struct obj_list_page *)0x1;

	cr_assert_eq(parse(xml, url, &page), TFS_E_PROTO, "accepted: %s", xml);
	cr_assert_null(page);
}

Test(s3_xml, page_fields)
{
	const char *xml = HEAD
		"<Name>bucket</Name><Prefix>photos/</Prefix><KeyCount>2</KeyCount>"
		"<MaxKeys>2</MaxKeys><IsTruncated>true</IsTruncated>"
		"<NextContinuationToken>1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM=</NextContinuationToken>"
		"<Contents><Key>photos/2006/a.jpg</Key>"
		"<LastModified>2009-10-12T17:50:30.000Z</LastModified>"
		"<ETag>&quot;fba9dede5f27731c9771645a39863328&quot;</ETag>"
		"<Size>434234</Size><StorageClass>STANDARD</StorageClass></Contents>"
		"<Contents><Key>photos/2006/b.jpg</Key>"
		"<LastModified>2024-02-29T23:59:59Z</LastModified>"
		"<ETag>\"abc-2\"</ETag><Size>0</Size></Contents>"
		"</ListBucketResult>";
	struct obj_list_page *p;

	cr_assert_eq(parse(xml, false, &p), TFS_OK);
	cr_assert(p->truncated);
	cr_assert_str_eq(p->next_token, "1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM=");
	cr_assert_eq(p->n_entries, 2);
	cr_assert_eq(p->n_prefixes, 0);
	cr_assert_str_eq(p->entries[0].key, "photos/2006/a.jpg");
	cr_assert_eq(p->entries[0].key_len, 17);
	cr_assert_eq(p->entries[0].meta.size, 434234);
	cr_assert_eq(p->entries[0].meta.mtime, 1255369830);
	cr_assert_str_eq(p->entries[0].meta.etag, "\"fba9dede5f27731c9771645a39863328\"");
	cr_assert_eq(p->entries[1].meta.size, 0);
	cr_assert_eq(p->entries[1].meta.mtime, 1709251199);
	cr_assert_str_eq(p->entries[1].meta.etag, "\"abc-2\"");
	obj_list_page_free(p);
}

Test(s3_xml, last_page_has_no_token)
{
	struct obj_list_page *p;

	cr_assert_eq(parse(HEAD "<IsTruncated>false</IsTruncated></ListBucketResult>", false, &p),
		     TFS_OK);
	cr_assert_not(p->truncated);
	cr_assert_null(p->next_token);
	cr_assert_eq(p->n_entries, 0);
	cr_assert_null(p->entries);
	obj_list_page_free(p);
	/* a truncated page must say where to go on */
	assert_proto(HEAD "<IsTruncated>true</IsTruncated></ListBucketResult>", false);
	assert_proto(HEAD "<IsTruncated>true</IsTruncated><NextContinuationToken>"
		     "</NextContinuationToken></ListBucketResult>", false);
}

Test(s3_xml, delimiter_and_common_prefixes)
{
	const char *xml = HEAD
		"<Delimiter>/</Delimiter><IsTruncated>false</IsTruncated>"
		"<Contents><Key>top.txt</Key><Size>5</Size>"
		"<LastModified>2024-03-01T01:00:00.123Z</LastModified><ETag>\"e\"</ETag></Contents>"
		"<CommonPrefixes><Prefix>a/</Prefix></CommonPrefixes>"
		"<CommonPrefixes><Prefix>b c/</Prefix></CommonPrefixes>"
		"<CommonPrefixes><Prefix>d+e/</Prefix></CommonPrefixes>"
		"</ListBucketResult>";
	struct obj_list_page *p;

	cr_assert_eq(parse(xml, false, &p), TFS_OK);
	cr_assert_eq(p->n_entries, 1);
	cr_assert_eq(p->entries[0].meta.mtime, 1709254800);
	cr_assert_eq(p->n_prefixes, 3);
	cr_assert_str_eq(p->prefixes[0].prefix, "a/");
	cr_assert_eq(p->prefixes[0].prefix_len, 2);
	cr_assert_str_eq(p->prefixes[1].prefix, "b c/");
	cr_assert_str_eq(p->prefixes[2].prefix, "d+e/");   /* not url-encoded: literal */
	obj_list_page_free(p);
}

Test(s3_xml, xml_entities_in_keys)
{
	const char *xml = HEAD "<IsTruncated>false</IsTruncated>"
		"<Contents><Key>a&amp;b&lt;c&gt;d&apos;e&quot;f&#x263A;g&#233;</Key><Size>1</Size></Contents>"
		"<Contents><Key><![CDATA[x<y>&z]]></Key><Size>2</Size></Contents>"
		"</ListBucketResult>";
	struct obj_list_page *p;

	cr_assert_eq(parse(xml, false, &p), TFS_OK);
	cr_assert_str_eq(p->entries[0].key, "a&b<c>d'e\"f\xe2\x98\xba" "g\xc3\xa9");
	cr_assert_str_eq(p->entries[1].key, "x<y>&z");
	/* LastModified and ETag are optional */
	cr_assert_eq(p->entries[1].meta.mtime, 0);
	cr_assert_str_eq(p->entries[1].meta.etag, "");
	obj_list_page_free(p);
}

Test(s3_xml, url_encoded_keys)
{
	const char *xml = HEAD "<EncodingType>url</EncodingType><IsTruncated>false</IsTruncated>"
		"<Contents><Key>a+b%2Bc%20d%25e</Key><Size>1</Size></Contents>"
		"<Contents><Key>nul%00byte</Key><Size>1</Size></Contents>"
		"<Contents><Key>latin1-%E9-%FF%FE</Key><Size>1</Size></Contents>"
		"<Contents><Key>%C3%BC%2Fx%2f</Key><Size>1</Size></Contents>"
		"<CommonPrefixes><Prefix>dir+with+space%2F/</Prefix></CommonPrefixes>"
		"</ListBucketResult>";
	struct obj_list_page *p;

	cr_assert_eq(parse(xml, true, &p), TFS_OK);
	cr_assert_str_eq(p->entries[0].key, "a b+c d%e");
	cr_assert_eq(p->entries[1].key_len, 8);
	cr_assert(memcmp(p->entries[1].key, "nul\0byte", 8) == 0);
	cr_assert_eq(p->entries[1].key[8], '\0');
	cr_assert_eq(p->entries[2].key_len, 11);
	cr_assert_str_eq(p->entries[2].key, "latin1-\xe9-\xff\xfe");
	cr_assert_str_eq(p->entries[3].key, "\xc3\xbc/x/");
	cr_assert_str_eq(p->prefixes[0].prefix, "dir with space//");
	obj_list_page_free(p);

	/* The reply's EncodingType wins over what the caller expected. */
	cr_assert_eq(parse(xml, false, &p), TFS_OK);
	cr_assert_str_eq(p->entries[0].key, "a b+c d%e");
	obj_list_page_free(p);

	/* Without EncodingType, the caller's flag decides. */
	const char *plain = HEAD "<IsTruncated>false</IsTruncated>"
		"<Contents><Key>a+b%20c</Key><Size>1</Size></Contents></ListBucketResult>";
	cr_assert_eq(parse(plain, false, &p), TFS_OK);
	cr_assert_str_eq(p->entries[0].key, "a+b%20c");
	obj_list_page_free(p);
	cr_assert_eq(parse(plain, true, &p), TFS_OK);
	cr_assert_str_eq(p->entries[0].key, "a b c");
	obj_list_page_free(p);
}

Test(s3_xml, bad_percent_escapes)
{
	assert_proto(HEAD "<IsTruncated>false</IsTruncated>"
		     "<Contents><Key>a%G0</Key><Size>1</Size></Contents></ListBucketResult>", true);
	assert_proto(HEAD "<IsTruncated>false</IsTruncated>"
		     "<Contents><Key>a%2</Key><Size>1</Size></Contents></ListBucketResult>", true);
	assert_proto(HEAD "<IsTruncated>false</IsTruncated>"
		     "<Contents><Key>a%</Key><Size>1</Size></Contents></ListBucketResult>", true);
	assert_proto(HEAD "<IsTruncated>false</IsTruncated><CommonPrefixes><Prefix>%zz/"
		     "</Prefix></CommonPrefixes></ListBucketResult>", true);
	assert_proto(HEAD "<EncodingType>base64</EncodingType><IsTruncated>false</IsTruncated>"
		     "</ListBucketResult>", false);
}

Test(s3_xml, malformed)
{
	struct obj_list_page *p = NULL;

	cr_assert_eq(s3_xml_parse_list("", 0, false, &p), TFS_E_PROTO);
	cr_assert_eq(s3_xml_parse_list(NULL, 0, false, &p), TFS_E_PROTO);
	assert_proto("not xml at all", false);
	assert_proto(HEAD "<IsTruncated>false</IsTruncated>", false);            /* cut short */
	assert_proto(HEAD "<IsTruncated>false</IsTrunc></ListBucketResult>", false);
	assert_proto("<Other><IsTruncated>false</IsTruncated></Other>", false);  /* wrong root */
	assert_proto(HEAD "</ListBucketResult>", false);                         /* no IsTruncated */
	assert_proto(HEAD "<IsTruncated>maybe</IsTruncated></ListBucketResult>", false);
	/* bad Contents */
	assert_proto(HEAD "<IsTruncated>false</IsTruncated><Contents><Size>1</Size></Contents>"
		     "</ListBucketResult>", false);
	assert_proto(HEAD "<IsTruncated>false</IsTruncated><Contents><Key></Key><Size>1</Size>"
		     "</Contents></ListBucketResult>", false);
	assert_proto(HEAD "<IsTruncated>false</IsTruncated><Contents><Key>k</Key></Contents>"
		     "</ListBucketResult>", false);
	assert_proto(HEAD "<IsTruncated>false</IsTruncated><Contents><Key>k</Key><Size>-1</Size>"
		     "</Contents></ListBucketResult>", false);
	assert_proto(HEAD "<IsTruncated>false</IsTruncated><Contents><Key>k</Key>"
		     "<Size>18446744073709551616</Size></Contents></ListBucketResult>", false);
	assert_proto(HEAD "<IsTruncated>false</IsTruncated><Contents><Key>k</Key><Size>1x</Size>"
		     "</Contents></ListBucketResult>", false);
	assert_proto(HEAD "<IsTruncated>false</IsTruncated><Contents><Key>k</Key><Size>1</Size>"
		     "<LastModified>yesterday</LastModified></Contents></ListBucketResult>", false);
	assert_proto(HEAD "<IsTruncated>false</IsTruncated><Contents><Key>k</Key><Size>1</Size>"
		     "<LastModified>2024-13-01T00:00:00Z</LastModified></Contents></ListBucketResult>",
		     false);
	/* XML 1.0 cannot carry a NUL, even as a character reference */
	assert_proto(HEAD "<IsTruncated>false</IsTruncated><Contents><Key>a&#0;b</Key>"
		     "<Size>1</Size></Contents></ListBucketResult>", false);
	/* an undeclared entity */
	assert_proto(HEAD "<IsTruncated>false</IsTruncated><Contents><Key>&nope;</Key>"
		     "<Size>1</Size></Contents></ListBucketResult>", false);
	/* an ETag longer than OBJ_ETAG_MAX */
	char big[600];
	snprintf(big, sizeof(big), HEAD "<IsTruncated>false</IsTruncated><Contents><Key>k</Key>"
		 "<Size>1</Size><ETag>%0200d</ETag></Contents></ListBucketResult>", 7);
	assert_proto(big, false);
}

/* Any DTD is refused: no entity can be declared, so none is expanded. */
Test(s3_xml, dtd_refused)
{
	assert_proto("<?xml version=\"1.0\"?><!DOCTYPE r [<!ENTITY x SYSTEM \"file:///etc/passwd\">]>"
		     "<ListBucketResult><IsTruncated>false</IsTruncated><Contents><Key>&x;</Key>"
		     "<Size>1</Size></Contents></ListBucketResult>", false);
	assert_proto("<?xml version=\"1.0\"?><!DOCTYPE r [<!ENTITY a \"aaaaaaaaaa\">"
		     "<!ENTITY b \"&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;\">"
		     "<!ENTITY c \"&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;\">]>"
		     "<ListBucketResult><IsTruncated>false</IsTruncated><Contents><Key>&c;</Key>"
		     "<Size>1</Size></Contents></ListBucketResult>", false);
	assert_proto("<?xml version=\"1.0\"?><!DOCTYPE ListBucketResult SYSTEM \"http://x/y.dtd\">"
		     "<ListBucketResult><IsTruncated>false</IsTruncated></ListBucketResult>", false);

	struct tfs_errinfo ei = { 0 };
	const char *err = "<!DOCTYPE Error [<!ENTITY x \"boom\">]><Error><Code>&x;</Code></Error>";
	cr_assert_eq(s3_xml_parse_error(err, strlen(err), &ei), TFS_E_PROTO);
	cr_assert_str_eq(ei.code, "");
}

Test(s3_xml, big_page)
{
	size_t cap = 1000 * 200 + 256, len;
	char *xml = malloc(cap);
	struct obj_list_page *p;

	len = (size_t)snprintf(xml, cap, "%s<IsTruncated>false</IsTruncated>", HEAD);
	for (int i = 0; i < 1000; i++)
		len += (size_t)snprintf(xml + len, cap - len, "<Contents><Key>k%04d</Key><Size>%d"
					"</Size><ETag>\"%d\"</ETag></Contents>", i, i, i);
	len += (size_t)snprintf(xml + len, cap - len, "</ListBucketResult>");
	cr_assert_eq(s3_xml_parse_list(xml, len, false, &p), TFS_OK);
	cr_assert_eq(p->n_entries, 1000);
	cr_assert_str_eq(p->entries[999].key, "k0999");
	cr_assert_eq(p->entries[999].meta.size, 999);
	obj_list_page_free(p);
	free(xml);
}

Test(s3_xml, error_body)
{
	struct tfs_errinfo ei = { 0 };
	const char *xml = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>NoSuchKey</Code>"
		"<Message>The resource you requested does not exist</Message>"
		"<Resource>/mybucket/myfoto.jpg</Resource><RequestId>4442587FB7D0A2F9</RequestId></Error>";

	cr_assert_eq(s3_xml_parse_error(xml, strlen(xml), &ei), TFS_OK);
	cr_assert_str_eq(ei.code, "NoSuchKey");
	cr_assert_str_eq(ei.message, "The resource you requested does not exist");

	/* radosgw sends an empty Message */
	tfs_errinfo_clear(&ei);
	xml = "<Error><Code>SignatureDoesNotMatch</Code><Message></Message></Error>";
	cr_assert_eq(s3_xml_parse_error(xml, strlen(xml), &ei), TFS_OK);
	cr_assert_str_eq(ei.code, "SignatureDoesNotMatch");
	cr_assert_str_eq(ei.message, "");

	/* control characters cannot forge log lines */
	xml = "<Error><Code>X</Code><Message>line1&#10;line2&#13;</Message></Error>";
	cr_assert_eq(s3_xml_parse_error(xml, strlen(xml), &ei), TFS_OK);
	cr_assert_str_eq(ei.message, "line1?line2?");

	/* long fields are truncated to fit */
	char big[2048];
	memset(ei.message, 0, sizeof(ei.message));
	snprintf(big, sizeof(big), "<Error><Code>%0100d</Code><Message>%0900d</Message></Error>", 1, 2);
	cr_assert_eq(s3_xml_parse_error(big, strlen(big), &ei), TFS_OK);
	cr_assert_eq(strlen(ei.code), sizeof(ei.code) - 1);
	cr_assert_eq(strlen(ei.message), sizeof(ei.message) - 1);

	/* not an error body: ei untouched */
	tfs_errinfo_clear(&ei);
	strcpy(ei.code, "keep");
	xml = "<Error><Message>no code</Message></Error>";
	cr_assert_eq(s3_xml_parse_error(xml, strlen(xml), &ei), TFS_E_PROTO);
	xml = "<Error><Code></Code></Error>";
	cr_assert_eq(s3_xml_parse_error(xml, strlen(xml), &ei), TFS_E_PROTO);
	xml = "<ListBucketResult/>";
	cr_assert_eq(s3_xml_parse_error(xml, strlen(xml), &ei), TFS_E_PROTO);
	cr_assert_eq(s3_xml_parse_error("<Error><Code>X", 14, &ei), TFS_E_PROTO);
	cr_assert_eq(s3_xml_parse_error("", 0, &ei), TFS_E_PROTO);
	cr_assert_str_eq(ei.code, "keep");
	/* ei may be NULL */
	xml = "<Error><Code>X</Code></Error>";
	cr_assert_eq(s3_xml_parse_error(xml, strlen(xml), NULL), TFS_OK);
}

Test(s3_xml, error_map)
{
	static const struct {
		int status;
		const char *code;
		int rc;
		bool retry;
	} t[] = {
		{ 200, NULL, TFS_OK, false },
		{ 206, "", TFS_OK, false },
		{ 404, "NoSuchKey", TFS_E_NOENT, false },
		{ 404, "NoSuchBucket", TFS_E_NOBUCKET, false },
		{ 404, NULL, TFS_E_NOENT, false },
		{ 404, "", TFS_E_NOENT, false },
		{ 403, "InvalidAccessKeyId", TFS_E_AUTH, false },
		{ 403, "SignatureDoesNotMatch", TFS_E_AUTH, false },
		{ 400, "ExpiredToken", TFS_E_AUTH, false },
		{ 403, "RequestTimeTooSkewed", TFS_E_AUTH, false },
		{ 403, "AccessDenied", TFS_E_ACCESS, false },
		{ 403, NULL, TFS_E_ACCESS, false },
		{ 401, NULL, TFS_E_AUTH, false },
		{ 412, "PreconditionFailed", TFS_E_STALE, false },
		{ 412, NULL, TFS_E_STALE, false },
		{ 416, "InvalidRange", TFS_E_RANGE, false },
		{ 416, NULL, TFS_E_RANGE, false },
		{ 400, "AuthorizationHeaderMalformed", TFS_E_INVAL, false },
		{ 301, "PermanentRedirect", TFS_E_INVAL, false },
		{ 400, "InvalidArgument", TFS_E_INVAL, false },
		{ 409, "BucketAlreadyExists", TFS_E_INVAL, false },
		{ 400, "XAmzContentSHA256Mismatch", TFS_E_IO, true },
		{ 400, "RequestTimeout", TFS_E_IO, true },
		{ 503, "SlowDown", TFS_E_IO, true },
		{ 503, NULL, TFS_E_IO, true },
		{ 500, "InternalError", TFS_E_IO, true },
		{ 502, NULL, TFS_E_IO, true },
		{ 504, NULL, TFS_E_IO, true },
		{ 429, NULL, TFS_E_IO, true },
		{ 408, NULL, TFS_E_IO, true },
		/* a transient status never becomes "not found" */
		{ 503, "NoSuchKey", TFS_E_IO, true },
		{ 500, "NoSuchBucket", TFS_E_IO, true },
		{ 302, NULL, TFS_E_PROTO, false },
		{ 0, NULL, TFS_E_PROTO, false },
		{ 0, "SlowDown", TFS_E_IO, true },
	};

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		bool retry = !t[i].retry;

		cr_assert_eq(s3_error_map(t[i].status, t[i].code, &retry), t[i].rc,
			     "%d %s -> %d, want %d", t[i].status, t[i].code ? t[i].code : "(null)",
			     s3_error_map(t[i].status, t[i].code, NULL), t[i].rc);
		cr_assert_eq(retry, t[i].retry, "%d %s retryable", t[i].status,
			     t[i].code ? t[i].code : "(null)");
	}
}

/* A page of Cloud Storage's XML API (ListObjectsV2), as its documentation
 * shows it: each Contents names its Generation. */
static const char gcs_page[] =
	"<?xml version='1.0' encoding='UTF-8'?>"
	"<ListBucketResult xmlns='http://doc.s3.amazonaws.com/2006-03-01'>"
	"<Name>travel-maps</Name><Prefix></Prefix><KeyCount>2</KeyCount><MaxKeys>1000</MaxKeys>"
	"<IsTruncated>false</IsTruncated>"
	"<Contents><Key>europe/france/paris.jpg</Key><Generation>1360887759327000</Generation>"
	"<MetaGeneration>1</MetaGeneration><LastModified>2013-02-15T00:22:39.328Z</LastModified>"
	"<ETag>\"53fc311c15eda0a4b66e6b2a9cd1f5ab\"</ETag><Size>7038</Size></Contents>"
	"<Contents><Key>europe/italy/rome.jpg</Key>"
	"<LastModified>2013-02-15T00:22:39.328Z</LastModified>"
	"<ETag>\"a1b2\"</ETag><Size>5</Size></Contents>"
	"</ListBucketResult>";

Test(s3_xml, gcs_generations_name_the_version)
{
	struct obj_list_page *p = NULL;

	cr_assert_eq(s3_xml_parse_list_v(gcs_page, strlen(gcs_page), false, true, &p), TFS_OK);
	cr_assert_eq(p->n_entries, 2);
	cr_assert_str_eq(p->entries[0].meta.etag, "gen:1360887759327000");
	cr_assert_eq(p->entries[0].meta.size, 7038);
	cr_assert_str_eq(p->entries[1].meta.etag, "\"a1b2\"", "no generation: the ETag");
	obj_list_page_free(p);
	/* S3 ignores the element */
	cr_assert_eq(s3_xml_parse_list(gcs_page, strlen(gcs_page), false, &p), TFS_OK);
	cr_assert_str_eq(p->entries[0].meta.etag, "\"53fc311c15eda0a4b66e6b2a9cd1f5ab\"");
	obj_list_page_free(p);
}

Test(s3_xml, gcs_bad_generation_is_malformed)
{
	static const char *const bad[] = { "", "12a", "-1", "123456789012345678901" };
	struct obj_list_page *p = NULL;
	char xml[1024];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(xml, sizeof(xml), "<ListBucketResult><IsTruncated>false</IsTruncated>"
			 "<Contents><Key>k</Key><Generation>%s</Generation><Size>1</Size>"
			 "</Contents></ListBucketResult>", bad[i]);
		cr_assert_eq(s3_xml_parse_list_v(xml, strlen(xml), false, true, &p), TFS_E_PROTO,
			     "case %zu", i);
		cr_assert_null(p);
	}
}

Test(s3_xml, gcs_error_bodies)
{
	/* Cloud Storage puts the detail in <Details> */
	static const char denied[] =
		"<?xml version='1.0' encoding='UTF-8'?><Error><Code>AccessDenied</Code>"
		"<Message>Access denied.</Message><Details>loader@p.iam.gserviceaccount.com does "
		"not have storage.objects.get access</Details></Error>";
	static const char auth[] =
		"<?xml version='1.0' encoding='UTF-8'?><Error><Code>AuthenticationRequired</Code>"
		"<Details>Invalid Credentials</Details></Error>";
	struct tfs_errinfo ei;
	bool retry = true;

	tfs_errinfo_clear(&ei);
	cr_assert_eq(s3_xml_parse_error(denied, strlen(denied), &ei), TFS_OK);
	cr_assert_str_eq(ei.message, "Access denied.");
	tfs_errinfo_clear(&ei);
	cr_assert_eq(s3_xml_parse_error(auth, strlen(auth), &ei), TFS_OK);
	cr_assert_str_eq(ei.code, "AuthenticationRequired");
	cr_assert_str_eq(ei.message, "Invalid Credentials");
	cr_assert_eq(s3_error_map(401, "AuthenticationRequired", &retry), TFS_E_AUTH);
	cr_assert_not(retry);
	cr_assert_eq(s3_error_map(400, "MissingSecurityHeader", &retry), TFS_E_AUTH);
	cr_assert_eq(s3_error_map(400, "UserProjectMissing", &retry), TFS_E_ACCESS);
	cr_assert_eq(s3_error_map(412, "PreconditionFailed", &retry), TFS_E_STALE);
	/* Cloud Storage's retry rules: 408, 429 and 5xx */
	cr_assert_eq(s3_error_map(429, "", &retry), TFS_E_IO);
	cr_assert(retry);
	cr_assert_eq(s3_error_map(503, "", &retry), TFS_E_IO);
	cr_assert(retry);
	cr_assert_eq(s3_error_map(408, "", &retry), TFS_E_IO);
	cr_assert(retry);
}
