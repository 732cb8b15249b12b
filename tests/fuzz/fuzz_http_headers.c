/* fuzz_http_headers.c - fuzz target of the S3 client's response-header
 * parser (status line, Content-Length, ETag, Last-Modified, Content-Range,
 * x-goog-generation), fed line by line as curl does.
 * Property: whatever it keeps is bounded and well-formed: NUL-terminated
 * strings, a generation of digits only, a Content-Range whose numbers
 * were all digits; no crash, no read outside the input.
 */
#include <assert.h>
#include <stdint.h>
#include <string.h>

#include "s3/s3_client_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct s3_headers_seen h;

	s3_client_parse_headers((const char *)data, size, &h);
	assert(h.status >= 0 && h.status <= 999);
	assert(memchr(h.etag, '\0', sizeof(h.etag)));
	assert(memchr(h.last_modified, '\0', sizeof(h.last_modified)));
	assert(memchr(h.generation, '\0', sizeof(h.generation)));
	assert(strspn(h.generation, "0123456789") == strlen(h.generation));
	assert(!h.have_etag || !h.etag_too_long || h.etag[0] != '\0' || size > 0);
	assert(!h.crange_total_known || h.have_crange);
	return 0;
}
