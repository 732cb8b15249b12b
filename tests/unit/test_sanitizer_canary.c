/* test_sanitizer_canary.c - proof that each sanitizer of this build is
 * live: tierfs-sanitizer-canary commits one bug per sanitizer in a child
 * process, and its report must appear.  Tests of sanitizers the build
 * was not made with are skipped (meson's b_sanitize reaches the code as
 * TIERFS_SANITIZE).  The child's report goes to a file, never to this
 * test's output, where scripts/test.sh would count it as a failure.
 * ThreadSanitizer's canary ("race") is run by scripts/test.sh itself:
 * Criterion cannot run under TSan.
 */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tmpdir.h"

#ifndef TIERFS_SANITIZE
#error "TIERFS_SANITIZE: the build's b_sanitize"
#endif
#ifndef TIERFS_CANARY
#error "TIERFS_CANARY: the canary's path"
#endif

extern char **environ;

static bool built_with(const char *san)
{
	return strstr(TIERFS_SANITIZE, san) != NULL;
}

/* Run the canary in mode; its stderr (malloc'd) and exit status. */
static char *canary(const char *mode, int *status)
{
	char dir[4096], path[4200];
	posix_spawn_file_actions_t fa;
	char *argv[] = { (char *)TIERFS_CANARY, (char *)mode, NULL };
	pid_t pid;
	FILE *f;
	char *out;
	long n;

	tmpdir_make(dir, sizeof(dir), "canary");
	snprintf(path, sizeof(path), "%s/canary.err", dir);
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 2, path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
	cr_assert_eq(posix_spawn(&pid, TIERFS_CANARY, &fa, NULL, argv, environ), 0);
	posix_spawn_file_actions_destroy(&fa);
	cr_assert_eq(waitpid(pid, status, 0), pid);
	f = fopen(path, "r");
	cr_assert_not_null(f);
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	rewind(f);
	out = calloc(1, (size_t)n + 1);
	cr_assert_eq(fread(out, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	unlink(path);
	rmdir(dir);
	return out;
}

static void expect_report(const char *mode, const char *report)
{
	int status;
	char *err = canary(mode, &status);

	cr_expect(strstr(err, report), "canary %s: no \"%s\" from the sanitizer (exit %d):\n%.2000s",
		  mode, report, WIFEXITED(status) ? WEXITSTATUS(status) : -1, err);
	free(err);
}

Test(sanitizer, address_reports_heap_overflow)
{
	if (!built_with("address"))
		cr_skip_test("not an ASan build");
	expect_report("heap-overflow", "heap-buffer-overflow");
}

Test(sanitizer, leak_reports_lost_memory)
{
	if (!built_with("address"))
		cr_skip_test("not an ASan build");
	if (getenv("ASAN_OPTIONS") && strstr(getenv("ASAN_OPTIONS"), "detect_leaks=0"))
		cr_skip_test("leak detection is off (ASAN_OPTIONS)");
	expect_report("leak", "detected memory leaks");
}

Test(sanitizer, undefined_reports_signed_overflow)
{
	if (!built_with("undefined"))
		cr_skip_test("not a UBSan build");
	expect_report("signed-overflow", "signed integer overflow");
}
