/* keypath.h - which object keys become which POSIX names.
 *
 * Rules (documented in the README):
 *  - a key is split on '/'; each component is a name in the tree;
 *  - a component that is empty ("a//b"), "." or "..", longer than 255 bytes
 *    or contains a NUL byte is unsafe: the key (or the whole subtree under
 *    that prefix) is left out and counted, never resolved;
 *  - a key ending in '/' is a directory marker: it makes the directory
 *    exist and is not itself a file;
 *  - when both "x" and "x/..." exist, the directory wins.
 * Pure functions, no allocation, thread-safe.
 */
#ifndef TIERFS_KEYPATH_H
#define TIERFS_KEYPATH_H

#include <stdbool.h>
#include <stddef.h>

#define KEYPATH_NAME_MAX 255

enum keypath_kind {
	KEYPATH_FILE = 0,      /* *name is a regular file */
	KEYPATH_DIR = 1,       /* *name is a directory */
	KEYPATH_MARKER = 2,    /* the directory's own marker object: skip quietly */
	KEYPATH_UNSAFE = -1,   /* not representable: skip and count */
};

/* Is name (len bytes) a safe single component? */
bool keypath_component_ok(const char *name, size_t len);

/* Classify one listing item under directory key dir_prefix (which is "" or
 * ends in '/').  item is a key (is_prefix false) or a common prefix ending
 * in '/' (is_prefix true), item_len bytes, and must start with dir_prefix.
 * On FILE/DIR, *name / *name_len point into item (not NUL-terminated). */
enum keypath_kind keypath_classify(const char *dir_prefix, size_t dir_len,
				   const char *item, size_t item_len, bool is_prefix,
				   const char **name, size_t *name_len);

#endif
