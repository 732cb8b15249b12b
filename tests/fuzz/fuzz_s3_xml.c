/* fuzz_s3_xml.c - fuzz target of the S3 XML replies: ListObjectsV2 pages
 * (plain and URL-encoded, with and without GCS generations) and error
 * bodies.  The first byte picks the flags; the rest is the reply.
 * Property: a page is returned whole and self-consistent or not at all
 * (TFS_E_PROTO), an error body fills NUL-terminated fields; no crash, no
 * leak, no read outside the input.
 */
#include <assert.h>
#include <stdint.h>
#include <string.h>

#include "common/tfs_err.h"
#include "s3/s3_xml.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct obj_list_page *page = (struct obj_list_page *)1;
	struct tfs_errinfo ei;
	const char *xml = (const char *)data + 1;
	int rc;

	if (size < 1)
		return 0;
	size--;
	rc = s3_xml_parse_list_v(xml, size, data[0] & 1, data[0] & 2, &page);
	if (rc == TFS_OK) {
		assert(page);
		assert(page->truncated == (page->next_token != NULL));
		for (size_t i = 0; i < page->n_entries; i++) {
			const struct obj_list_entry *e = &page->entries[i];
			assert(e->key && e->key[e->key_len] == '\0');
			assert(memchr(e->meta.etag, '\0', sizeof(e->meta.etag)));
		}
		for (size_t i = 0; i < page->n_prefixes; i++) {
			const struct obj_list_prefix *p = &page->prefixes[i];
			assert(p->prefix && p->prefix[p->prefix_len] == '\0');
		}
		obj_list_page_free(page);
	} else {
		assert(rc < 0);
		assert(page == NULL);
	}
	tfs_errinfo_clear(&ei);
	if (s3_xml_parse_error(xml, size, &ei) == TFS_OK) {
		assert(memchr(ei.code, '\0', sizeof(ei.code)) && ei.code[0]);
		assert(memchr(ei.message, '\0', sizeof(ei.message)));
	}
	return 0;
}
