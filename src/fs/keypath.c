/* keypath.c - object key -> POSIX name rules (see keypath.h). */
#include "fs/keypath.h"

#include <string.h>

bool keypath_component_ok(const char *name, size_t len)
{
	if (len == 0 || len > KEYPATH_NAME_MAX)
		return false;
	if (name[0] == '.' && (len == 1 || (len == 2 && name[1] == '.')))
		return false;
	return memchr(name, '\0', len) == NULL && memchr(name, '/', len) == NULL;
}

enum keypath_kind keypath_classify(const char *dir_prefix, size_t dir_len,
				   const char *item, size_t item_len, bool is_prefix,
				   const char **name, size_t *name_len)
{
	const char *rest;
	size_t n;

	*name = NULL;
	*name_len = 0;
	if (item_len < dir_len || memcmp(item, dir_prefix, dir_len) != 0)
		return KEYPATH_UNSAFE;
	rest = item + dir_len;
	n = item_len - dir_len;
	if (!is_prefix) {
		if (n == 0)
			return KEYPATH_MARKER;
		/* with delimiter '/' a key's remainder has no '/'; if it does
		 * (e.g. a listing without delimiter) only its first component
		 * counts, as a directory */
		const char *slash = memchr(rest, '/', n);
		if (slash) {
			n = (size_t)(slash - rest);
			is_prefix = true;
		}
	} else {
		if (n == 0 || rest[n - 1] != '/')
			return KEYPATH_UNSAFE;
		n--;
		if (memchr(rest, '/', n))
			return KEYPATH_UNSAFE;
	}
	if (!keypath_component_ok(rest, n))
		return KEYPATH_UNSAFE;
	*name = rest;
	*name_len = n;
	return is_prefix ? KEYPATH_DIR : KEYPATH_FILE;
}
