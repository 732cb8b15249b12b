/* clock.h - the clocks tierfs reads, in the units it uses.
 *
 * Monotonic for durations and ages within one run; the wall clock only
 * for what must survive a restart (a saved listing's age, access times
 * kept on disk).  The _coarse variants read the vDSO's tick-precise
 * clocks: no syscall, for hot paths that need milliseconds or seconds.
 */
#ifndef TIERFS_CLOCK_H
#define TIERFS_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline uint64_t clock_ts_us(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

/* Monotonic microseconds. */
static inline uint64_t clock_mono_us(void)
{
	return clock_ts_us(CLOCK_MONOTONIC);
}

/* Monotonic seconds, as a double (uptimes, ages shown to people). */
static inline double clock_mono_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Monotonic milliseconds, tick precision, no syscall. */
static inline int64_t clock_coarse_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Wall-clock microseconds since the epoch. */
static inline uint64_t clock_wall_us(void)
{
	return clock_ts_us(CLOCK_REALTIME);
}

/* Wall-clock seconds since the epoch, tick precision, no syscall. */
static inline uint64_t clock_wall_coarse_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME_COARSE, &ts);
	return (uint64_t)ts.tv_sec;
}

#endif
