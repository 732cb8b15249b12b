/* log.h - leveled logging to stderr or syslog.
 *
 * A disabled level costs one branch (the macro tests the level first).
 * Never pass secrets to these functions.  Thread-safe.
 */
#ifndef TIERFS_LOG_H
#define TIERFS_LOG_H

#include <stdbool.h>

/* NOTICE is always printed: answers to an operator (stats on SIGUSR1). */
enum log_level { LOG_LVL_NOTICE = 0, LOG_LVL_ERROR, LOG_LVL_WARN, LOG_LVL_INFO, LOG_LVL_DEBUG };

/* The current threshold; read without a lock (a stale read only changes
 * whether one message is printed). */
extern int log_threshold;

/* Send messages to syslog instead of stderr (after daemonizing). */
void log_use_syslog(bool on);
void log_set_level(int level);
void log_msg(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define log_at(lvl, ...) do { if ((lvl) <= log_threshold) log_msg((lvl), __VA_ARGS__); } while (0)
#define log_notice(...) log_at(LOG_LVL_NOTICE, __VA_ARGS__)
#define log_error(...) log_at(LOG_LVL_ERROR, __VA_ARGS__)
#define log_warn(...) log_at(LOG_LVL_WARN, __VA_ARGS__)
#define log_info(...) log_at(LOG_LVL_INFO, __VA_ARGS__)
#define log_debug(...) log_at(LOG_LVL_DEBUG, __VA_ARGS__)

#endif
