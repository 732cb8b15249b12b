/* Unit tests for src/fs/keypath: which keys become which names. */
#include <criterion/criterion.h>
#include <string.h>

#include "fs/keypath.h"

static enum keypath_kind classify(const char *dir, const char *item, size_t item_len,
				  bool is_prefix, char *name_out)
{
	const char *name;
	size_t n;
	enum keypath_kind k = keypath_classify(dir, strlen(dir), item, item_len, is_prefix, &name, &n);

	name_out[0] = '\0';
	if (name) {
		memcpy(name_out, name, n);
		name_out[n] = '\0';
	}
	return k;
}

Test(keypath, component_rules)
{
	char big[300];

	cr_assert(keypath_component_ok("a", 1));
	cr_assert(keypath_component_ok("...", 3));
	cr_assert(keypath_component_ok(".hidden", 7));
	cr_assert(keypath_component_ok("with space+plus%", 16));
	cr_assert_not(keypath_component_ok("", 0));
	cr_assert_not(keypath_component_ok(".", 1));
	cr_assert_not(keypath_component_ok("..", 2));
	cr_assert_not(keypath_component_ok("a\0b", 3));
	cr_assert_not(keypath_component_ok("a/b", 3));
	memset(big, 'x', sizeof(big));
	cr_assert(keypath_component_ok(big, 255));
	cr_assert_not(keypath_component_ok(big, 256));
}

Test(keypath, files_dirs_markers)
{
	char name[300];

	cr_assert_eq(classify("", "file.txt", 8, false, name), KEYPATH_FILE);
	cr_assert_str_eq(name, "file.txt");
	cr_assert_eq(classify("a/b/", "a/b/c", 5, false, name), KEYPATH_FILE);
	cr_assert_str_eq(name, "c");
	cr_assert_eq(classify("a/", "a/sub/", 6, true, name), KEYPATH_DIR);
	cr_assert_str_eq(name, "sub");
	cr_assert_eq(classify("a/", "a/", 2, false, name), KEYPATH_MARKER);
	/* a key below the listing level without delimiter: first component is a dir */
	cr_assert_eq(classify("", "x/y/z", 5, false, name), KEYPATH_DIR);
	cr_assert_str_eq(name, "x");
}

Test(keypath, hostile_keys_are_unsafe)
{
	char name[300], big[320];

	cr_assert_eq(classify("a/", "a/../", 5, true, name), KEYPATH_UNSAFE);   /* a/../b */
	cr_assert_eq(classify("", "./", 2, true, name), KEYPATH_UNSAFE);        /* ./c */
	cr_assert_eq(classify("d/", "d//", 3, true, name), KEYPATH_UNSAFE);     /* d//e */
	cr_assert_eq(classify("f/", "f/./", 4, true, name), KEYPATH_UNSAFE);    /* f/./g */
	cr_assert_eq(classify("", "..", 2, false, name), KEYPATH_UNSAFE);
	cr_assert_eq(classify("", "a\0b", 3, false, name), KEYPATH_UNSAFE);
	memset(big, 'k', 300);
	cr_assert_eq(classify("", big, 300, false, name), KEYPATH_UNSAFE);
	/* an item outside the listed directory is never accepted */
	cr_assert_eq(classify("a/", "b/c", 3, false, name), KEYPATH_UNSAFE);
	cr_assert_eq(classify("a/", "a/x/y/", 6, true, name), KEYPATH_UNSAFE);
}
