/* iofault.c - an LD_PRELOAD shim that makes a process's disk fail on a
 * schedule: pread, pwrite, fsync and fdatasync of files whose path
 * contains a given string return an error every Nth call.  The tests use
 * it to give the SSD tier a failing cache disk without a failing device.
 *
 * Environment (read once, at the first call):
 *   TIERFS_IOFAULT_PATH   the substring a file's path must contain
 *                         (default "/objects/"); "" = every file
 *   TIERFS_IOFAULT_OPS    which calls fail: any of "pread,pwrite,fsync"
 *                         (fsync covers fdatasync; default all three)
 *   TIERFS_IOFAULT_EVERY  fail every Nth matching call (default 3; 0 = off)
 *   TIERFS_IOFAULT_ERRNO  EIO (default), ENOSPC, or EINVAL (with
 *                         TIERFS_IOFAULT_DIRECT: a filesystem that opens
 *                         files O_DIRECT but refuses such reads or writes)
 *   TIERFS_IOFAULT_DIRECT "1": only calls on descriptors opened with
 *                         O_DIRECT (the device fails, its page cache not)
 *   TIERFS_IOFAULT_LOG    a file that gets one line per injected failure
 *
 * A path is looked up through /proc/self/fd on each call: slow, and only
 * meant for tests.  Thread-safe (one atomic counter per kind of call).
 * Under ASan the runtime must not insist on coming first:
 * ASAN_OPTIONS=verify_asan_link_order=0.
 */
/* Both pread and pread64 are defined here (a program built with 64-bit
 * offsets calls the latter): the header must not rename one into the other. */
#undef _FILE_OFFSET_BITS
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { OP_PREAD, OP_PWRITE, OP_FSYNC, OP_N };

static const char *const op_names[OP_N] = { "pread", "pwrite", "fsync" };

static pthread_once_t once = PTHREAD_ONCE_INIT;
static char match[256];
static bool op_on[OP_N];
static unsigned long every;
static int fail_errno;
static bool direct_only;
static int log_fd = -1;
static atomic_ulong calls[OP_N];

static ssize_t (*real_pread)(int, void *, size_t, off_t);
static ssize_t (*real_pwrite)(int, const void *, size_t, off_t);
static int (*real_fsync)(int);
static int (*real_fdatasync)(int);

static void setup(void)
{
	const char *s;

	/* POSIX's way of turning dlsym's object pointer into a function's */
	*(void **)&real_pread = dlsym(RTLD_NEXT, "pread");
	*(void **)&real_pwrite = dlsym(RTLD_NEXT, "pwrite");
	*(void **)&real_fsync = dlsym(RTLD_NEXT, "fsync");
	*(void **)&real_fdatasync = dlsym(RTLD_NEXT, "fdatasync");
	s = getenv("TIERFS_IOFAULT_PATH");
	snprintf(match, sizeof(match), "%s", s ? s : "/objects/");
	s = getenv("TIERFS_IOFAULT_OPS");
	for (int i = 0; i < OP_N; i++)
		op_on[i] = !s || strstr(s, op_names[i]) != NULL;
	s = getenv("TIERFS_IOFAULT_EVERY");
	every = s ? strtoul(s, NULL, 10) : 3;
	s = getenv("TIERFS_IOFAULT_ERRNO");
	fail_errno = s && !strcmp(s, "ENOSPC") ? ENOSPC : s && !strcmp(s, "EINVAL") ? EINVAL : EIO;
	s = getenv("TIERFS_IOFAULT_DIRECT");
	direct_only = s && !strcmp(s, "1");
	s = getenv("TIERFS_IOFAULT_LOG");
	if (s && *s)
		log_fd = open(s, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
}

/* Should this call on fd fail?  Sets errno when it should. */
static bool fault(int op, int fd)
{
	char link[64], path[4096];
	ssize_t n;
	unsigned long c;

	pthread_once(&once, setup);
	if (!op_on[op] || every == 0)
		return false;
	if (direct_only) {
		int fl = fcntl(fd, F_GETFL);

		if (fl < 0 || !(fl & O_DIRECT))
			return false;
	}
	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	n = readlink(link, path, sizeof(path) - 1);
	if (n < 0)
		return false;
	path[n] = '\0';
	if (!strstr(path, match))
		return false;
	c = atomic_fetch_add(&calls[op], 1) + 1;
	if (c % every != 0)
		return false;
	if (log_fd >= 0) {
		char line[4200];
		int m = snprintf(line, sizeof(line), "%s %s %s\n", op_names[op],
				 fail_errno == ENOSPC ? "ENOSPC" : fail_errno == EINVAL ? "EINVAL" : "EIO",
				 path);
		if (m > 0 && write(log_fd, line, (size_t)m < sizeof(line) ? (size_t)m : sizeof(line) - 1) < 0)
			(void)0;
	}
	errno = fail_errno;
	return true;
}

ssize_t pread(int fd, void *buf, size_t n, off_t off)
{
	if (fault(OP_PREAD, fd))
		return -1;
	return real_pread(fd, buf, n, off);
}

ssize_t pread64(int fd, void *buf, size_t n, off64_t off)
{
	return pread(fd, buf, n, off);
}

ssize_t pwrite(int fd, const void *buf, size_t n, off_t off)
{
	if (fault(OP_PWRITE, fd))
		return -1;
	return real_pwrite(fd, buf, n, off);
}

ssize_t pwrite64(int fd, const void *buf, size_t n, off64_t off)
{
	return pwrite(fd, buf, n, off);
}

int fsync(int fd)
{
	if (fault(OP_FSYNC, fd))
		return -1;
	return real_fsync(fd);
}

int fdatasync(int fd)
{
	if (fault(OP_FSYNC, fd))
		return -1;
	return real_fdatasync(fd);
}
