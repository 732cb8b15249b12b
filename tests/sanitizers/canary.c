/* canary.c - tierfs-sanitizer-canary: one deliberate bug per sanitizer,
 * so a test can prove the sanitizer of its build is live (a sanitizer
 * build that silently lost its instrumentation would pass everything).
 *
 *   tierfs-sanitizer-canary heap-overflow | leak | signed-overflow | race
 *
 * Each mode commits its bug and exits 0; a live sanitizer reports it on
 * stderr (and for most, exits non-zero).  Never run outside the tests.
 */
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static volatile int shared;        /* raced on, on purpose */

static void *racer(void *arg)
{
	for (int i = 0; i < 100000; i++)
		shared++;
	return arg;
}

int main(int argc, char **argv)
{
	if (argc != 2)
		return 2;
	if (strcmp(argv[1], "heap-overflow") == 0) {
		volatile char *p = malloc(16);
		volatile size_t i = 16;
		p[i] = 1;          /* one past the end */
		free((void *)p);
	} else if (strcmp(argv[1], "leak") == 0) {
		void *volatile p = malloc(4096);
		memset(p, 1, 4096);
		p = NULL;          /* lost */
	} else if (strcmp(argv[1], "signed-overflow") == 0) {
		volatile int a = INT_MAX, b = 1;
		printf("%d\n", a + b);
	} else if (strcmp(argv[1], "race") == 0) {
		pthread_t t1, t2;
		pthread_create(&t1, NULL, racer, NULL);
		pthread_create(&t2, NULL, racer, NULL);
		pthread_join(t1, NULL);
		pthread_join(t2, NULL);
	} else {
		return 2;
	}
	return 0;
}
