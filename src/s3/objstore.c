/* objstore.c - helpers shared by every objstore backend (see objstore.h). */
#include "s3/objstore.h"

#include <stdlib.h>

void obj_list_page_free(struct obj_list_page *page)
{
	if (!page)
		return;
	for (size_t i = 0; i < page->n_entries; i++)
		free(page->entries[i].key);
	for (size_t i = 0; i < page->n_prefixes; i++)
		free(page->prefixes[i].prefix);
	free(page->entries);
	free(page->prefixes);
	free(page->next_token);
	free(page);
}
