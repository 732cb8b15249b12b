/* readahead.c - read-ahead decisions for file and directory streams. */
#include "fs/readahead.h"

void ra_file_init(struct ra_file *r)
{
	*r = (struct ra_file){ 0 };
}

static void ra_file_restart(struct ra_file *r, uint64_t end, uint64_t chunk)
{
	r->started = true;
	r->streak = 0;
	r->next_off = end;
	r->cur_chunk = chunk;
	r->frontier = 0;
	r->window = 0;
}

uint64_t ra_file_on_read(struct ra_file *r, uint64_t chunk_size, uint64_t window_max,
			 uint64_t off, uint64_t len, uint64_t size, uint64_t *first)
{
	uint64_t slack = RA_SEQ_SLACK * chunk_size, end = off + len, cur, last, want, from;

	*first = 0;
	if (len == 0 || size == 0 || chunk_size == 0)
		return 0;
	if (!r->started || off + slack < r->next_off || off > r->next_off + slack) {
		r->seeked = r->seeked || r->started;
		ra_file_restart(r, end, (end - 1) / chunk_size);
		r->run_start = off;
		r->run_bytes = len;
		return 0;
	}
	if (end <= r->next_off)
		return 0;                   /* behind the stream's end: nothing new */
	r->streak++;
	r->run_bytes += end - (off > r->next_off ? off : r->next_off);
	r->next_off = end;
	if (r->streak < RA_FILE_STREAK || (r->run_start != 0 && r->run_bytes < chunk_size))
		return 0;
	cur = (r->next_off - 1) / chunk_size;
	if (r->window == 0)
		r->window = chunk_size;
	else if (cur > r->cur_chunk && r->window < window_max)
		r->window = r->window * 2 < window_max ? r->window * 2 : window_max;
	r->cur_chunk = cur;
	if (r->window > window_max)
		r->window = window_max;
	last = (size - 1) / chunk_size;
	want = cur + r->window / chunk_size;
	if (want > last)
		want = last;
	from = r->frontier > cur + 1 ? r->frontier : cur + 1;
	if (r->window < chunk_size || from > want)
		return 0;
	r->frontier = want + 1;
	*first = from;
	return want - from + 1;
}

bool ra_file_random(const struct ra_file *r, uint64_t chunk_size)
{
	uint64_t far = RA_SEQ_SLACK * chunk_size;

	return (r->seeked || r->run_start > far) && r->run_start != 0 &&
	       r->run_bytes < chunk_size;
}

void ra_file_unissue(struct ra_file *r, uint64_t chunk)
{
	if (chunk < r->frontier)
		r->frontier = chunk;
}

void ra_dir_init(struct ra_dir *d)
{
	*d = (struct ra_dir){ 0 };
}

bool ra_dir_on_open(struct ra_dir *d, size_t idx, unsigned streak, size_t *from)
{
	*from = 0;
	if (d->started && idx <= d->last && idx + RA_DIR_SLACK >= d->last)
		return false;               /* the same file again, or another worker's */
	if (!d->started || idx < d->last || idx > d->last + RA_DIR_SLACK) {
		d->started = true;
		d->streak = 0;
		d->last = idx;
		d->next = idx + 1;
		return false;
	}
	d->streak++;
	d->last = idx;
	if (d->next < idx + 1)
		d->next = idx + 1;
	if (d->streak < streak)
		return false;
	*from = d->next;
	return true;
}

void ra_dir_issued(struct ra_dir *d, size_t next)
{
	d->next = next;
}
