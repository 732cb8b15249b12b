/* access_trace.c - a buffered, mutex-guarded trace writer (see access_trace.h).
 *
 * Invariant (under lock): records counts lines handed to stdio since the
 * last successful check; once a write fails, failed is set and every later
 * access only counts as dropped.
 */
#include "tiers/access_trace.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <xxhash.h>

#include "common/log.h"
#include "common/tfs_err.h"

#define TRACE_BUF (1u << 20)
#define TRACE_LINE_MAX 4096      /* the simulator's TRACE_MAX_LINE */
/* the simulator's TRACE_HEADER_3 starts the line */
#define ACCESS_TRACE_HEADER \
	"# tierfs trace 3: CHUNK_BYTES READ_BYTES VISIT OBJECT_KEY CHUNK_INDEX\n"

struct access_trace {
	pthread_mutex_t lock;
	FILE *f;
	char *path;
	bool failed;
	uint64_t records, dropped;
};

int access_trace_start(const char *path, struct access_trace **out, char *err, size_t errlen)
{
	struct access_trace *t;
	int fd;

	*out = NULL;
	if (path[0] != '/') {
		snprintf(err, errlen, "the trace file must be an absolute path: %s", path);
		return TFS_E_INVAL;
	}
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0) {
		snprintf(err, errlen, "%s: %s", path,
			 errno == ELOOP ? "is a symlink: refused" : strerror(errno));
		return errno == ENOENT ? TFS_E_NOENT : errno == EACCES ? TFS_E_ACCESS : TFS_E_IO;
	}
	t = calloc(1, sizeof(*t));
	if (!t || !(t->path = strdup(path)) || !(t->f = fdopen(fd, "w"))) {
		if (t)
			free(t->path);
		free(t);
		close(fd);
		snprintf(err, errlen, "out of memory");
		return TFS_E_NOMEM;
	}
	setvbuf(t->f, NULL, _IOFBF, TRACE_BUF);
	/* buffered: a failure shows at the first flush, like any record's */
	fputs(ACCESS_TRACE_HEADER, t->f);
	pthread_mutex_init(&t->lock, NULL);
	*out = t;
	return TFS_OK;
}

/* Can key be written as is and read back as the same key? */
static bool key_plain(const char *key, size_t len)
{
	if (len == 0 || len + 64 > TRACE_LINE_MAX || key[0] == '#' || key[0] == ' ' ||
	    key[len - 1] == ' ')
		return false;
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)key[i] < 0x20 || key[i] == 0x7f)
			return false;
	return true;
}

void access_trace_record(struct access_trace *t, const char *key, uint64_t chunk_index,
			 uint64_t chunk_bytes, uint64_t read_bytes, bool visit)
{
	size_t len = strlen(key);
	int n;

	pthread_mutex_lock(&t->lock);
	if (t->failed) {
		t->dropped++;
		goto out;
	}
	if (key_plain(key, len))
		n = fprintf(t->f, "%" PRIu64 " %" PRIu64 " %d %s %" PRIu64 "\n", chunk_bytes,
			    read_bytes, visit, key, chunk_index);
	else
		n = fprintf(t->f, "%" PRIu64 " %" PRIu64 " %d 0x%016" PRIx64 "\n", chunk_bytes,
			    read_bytes, visit, XXH3_64bits_withSeed(key, len, chunk_index));
	if (n < 0) {
		t->failed = true;
		t->dropped++;
		log_warn("access trace %s: write failed (%s): recording stopped", t->path,
			 strerror(errno));
		goto out;
	}
	t->records++;
out:
	pthread_mutex_unlock(&t->lock);
}

uint64_t access_trace_records(struct access_trace *t)
{
	uint64_t n;

	pthread_mutex_lock(&t->lock);
	n = t->records;
	pthread_mutex_unlock(&t->lock);
	return n;
}

uint64_t access_trace_dropped(struct access_trace *t)
{
	uint64_t n;

	pthread_mutex_lock(&t->lock);
	n = t->dropped;
	pthread_mutex_unlock(&t->lock);
	return n;
}

uint64_t access_trace_stop(struct access_trace *t)
{
	uint64_t n;

	if (!t)
		return 0;
	if (fclose(t->f) != 0 && !t->failed) {
		/* the last buffer did not reach the disk: say so */
		log_warn("access trace %s: final write failed (%s): the trace is incomplete",
			 t->path, strerror(errno));
	}
	n = t->records;
	pthread_mutex_destroy(&t->lock);
	free(t->path);
	free(t);
	return n;
}
