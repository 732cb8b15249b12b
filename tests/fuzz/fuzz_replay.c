/* fuzz_replay.c - run one fuzz target without libFuzzer, as a unit test.
 *
 * Linked with one fuzz_NAME.c (which defines LLVMFuzzerTestOneInput) and
 * built with the project's compiler, so the normal and the sanitizer
 * builds both run it: every file of the target's seed corpus
 * (tests/fuzz/corpus/NAME, FUZZ_CORPUS), then a fixed number of
 * deterministic mutations of those seeds (TIERFS_FUZZ_ROUNDS, default
 * 20000): bit flips, deleted runs, inserted tokens and bytes, splices of
 * two seeds.  Each input is copied into a buffer of exactly its size, so
 * ASan sees a read past its end.  scripts/fuzz.sh runs the same target
 * under libFuzzer, with the same corpus as its seeds.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#ifndef FUZZ_CORPUS
#error "FUZZ_CORPUS: the seed corpus directory"
#endif

#define SEEDS_MAX 256
#define SEED_BYTES_MAX (256u << 10)
#define INPUT_MAX (512u << 10)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct seed {
	unsigned char *data;
	size_t len;
};

static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The corpus in name order (the same mutations on every machine). */
static size_t seeds_load(struct seed *s, size_t max)
{
	DIR *d = opendir(FUZZ_CORPUS);
	struct dirent *de;
	char *names[SEEDS_MAX];
	size_t nn = 0, n = 0;

	cr_assert_not_null(d, "seed corpus %s missing", FUZZ_CORPUS);
	while ((de = readdir(d)) && nn < SEEDS_MAX)
		if (de->d_name[0] != '.')
			names[nn++] = strdup(de->d_name);
	closedir(d);
	qsort(names, nn, sizeof(names[0]), name_cmp);
	for (size_t i = 0; i < nn && n < max; i++) {
		char path[4096];
		FILE *f;

		snprintf(path, sizeof(path), "%s/%s", FUZZ_CORPUS, names[i]);
		f = fopen(path, "rb");
		cr_assert_not_null(f, "cannot open %s", path);
		s[n].data = malloc(SEED_BYTES_MAX);
		cr_assert_not_null(s[n].data);
		s[n].len = fread(s[n].data, 1, SEED_BYTES_MAX, f);
		fclose(f);
		free(names[i]);
		n++;
	}
	return n;
}

/* xorshift64* */
static uint64_t next(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 2685821657736338717ull;
}

static void run_one(const unsigned char *buf, size_t len)
{
	unsigned char *copy = malloc(len ? len : 1);

	cr_assert_not_null(copy);
	memcpy(copy, buf, len);
	LLVMFuzzerTestOneInput(copy, len);
	free(copy);
}

static size_t insert(unsigned char *buf, size_t len, size_t pos, const void *p, size_t n)
{
	if (len + n > INPUT_MAX)
		return len;
	memmove(buf + pos + n, buf + pos, len - pos);
	memcpy(buf + pos, p, n);
	return len + n;
}

static size_t mutate(unsigned char *buf, size_t len, const struct seed *seeds, size_t nseeds,
		     uint64_t *s)
{
	static const char *const tokens[] = {
		"<", ">", "</", "/>", "\"", "'", "{", "}", "[", "]", ":", ",", "=", "\n", "\r\n",
		" ", "\t", "-", "/", "*", "%", "%00", "%zz", "&amp;", "&#0;", "\\u0000", "\\",
		"0", "-1", "18446744073709551616", "99999999999999999999999", "1e999", "null",
		"true", "..", "//", "\xff", "\xc3\x28", "\x00", "[a]", "#", ";",
	};
	size_t edits = 1 + next(s) % 8;

	for (size_t e = 0; e < edits; e++) {
		size_t pos = len ? next(s) % (len + 1) : 0;

		switch (next(s) % 6) {
		case 0:     /* flip a bit */
			if (len)
				buf[pos % len] ^= (unsigned char)(1u << (next(s) % 8));
			break;
		case 1: {   /* delete a run */
			size_t n = 1 + next(s) % 16;
			if (!len)
				break;
			pos %= len;
			if (n > len - pos)
				n = len - pos;
			memmove(buf + pos, buf + pos + n, len - pos - n);
			len -= n;
			break;
		}
		case 2: {   /* a random byte */
			unsigned char c = (unsigned char)next(s);
			len = insert(buf, len, pos, &c, 1);
			break;
		}
		case 3: {   /* a run of another seed */
			const struct seed *o = &seeds[next(s) % nseeds];
			size_t from, n;
			if (!o->len)
				break;
			from = next(s) % o->len;
			n = 1 + next(s) % 64;
			if (n > o->len - from)
				n = o->len - from;
			len = insert(buf, len, pos, o->data + from, n);
			break;
		}
		case 4:     /* cut here */
			len = pos;
			break;
		default: {  /* a token */
			const char *t = tokens[next(s) % (sizeof(tokens) / sizeof(tokens[0]))];
			len = insert(buf, len, pos, t, t[0] ? strlen(t) : 1);
		}
		}
	}
	return len;
}

Test(fuzz, seeds_and_mutations_never_crash, .timeout = 600)
{
	static struct seed seeds[SEEDS_MAX];
	size_t n = seeds_load(seeds, SEEDS_MAX);
	const char *env = getenv("TIERFS_FUZZ_ROUNDS");
	unsigned long rounds = env ? strtoul(env, NULL, 10) : 20000;
	unsigned char *buf = malloc(INPUT_MAX);
	uint64_t s = 0x9e3779b97f4a7c15ull;

	cr_assert_gt(n, 0, "empty seed corpus %s", FUZZ_CORPUS);
	cr_assert_not_null(buf);
	for (size_t i = 0; i < n; i++)
		run_one(seeds[i].data, seeds[i].len);
	for (unsigned long r = 0; r < rounds; r++) {
		const struct seed *sd = &seeds[next(&s) % n];
		size_t len = sd->len;

		memcpy(buf, sd->data, len);
		len = mutate(buf, len, seeds, n, &s);
		run_one(buf, len);
	}
	free(buf);
	for (size_t i = 0; i < n; i++)
		free(seeds[i].data);
}
