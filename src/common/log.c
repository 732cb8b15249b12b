/* log.c - leveled logging (see log.h).  The threshold is the only global:
 * a process-wide logging setting, written once at start-up. */
#include "common/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <syslog.h>
#include <time.h>

int log_threshold = LOG_LVL_WARN;
static bool log_syslog;

void log_use_syslog(bool on)
{
	if (on && !log_syslog)
		openlog("tierfs", LOG_PID, LOG_DAEMON);
	log_syslog = on;
}

void log_set_level(int level)
{
	log_threshold = level;
}

void log_msg(int level, const char *fmt, ...)
{
	static const char *const names[] = { "notice", "error", "warning", "info", "debug" };
	static const int prio[] = { LOG_NOTICE, LOG_ERR, LOG_WARNING, LOG_INFO, LOG_DEBUG };
	va_list ap;

	if (level < 0 || level > LOG_LVL_DEBUG)
		level = LOG_LVL_ERROR;
	va_start(ap, fmt);
	if (log_syslog) {
		vsyslog(prio[level], fmt, ap);
	} else {
		char line[4096];   /* a stats line is long */
		vsnprintf(line, sizeof(line), fmt, ap);
		fprintf(stderr, "tierfs: %s: %s\n", names[level], line);
	}
	va_end(ap);
}
