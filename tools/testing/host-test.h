/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the host tests under tools/testing share: checks that count and
 * show the first failures, a fixed-seed random generator so that a failure
 * repeats, and -nN, which runs wrong version N of the code under test
 * instead, for the test to show it can fail.
 */
#ifndef AFRDMA_HOST_TEST_H
#define AFRDMA_HOST_TEST_H

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))

static const char *host_test;
static unsigned long long checks, failures;
static int naive;

/* Counts a check; the first ten failures are shown with their case. */
static inline void expect(bool ok, const char *what, unsigned long long i)
{
	checks++;
	if (ok)
		return;
	if (failures++ < 10)
		fprintf(stderr, "%s: %s (case %llu)\n", host_test, what, i);
}

static unsigned long long rnd_state;

/* xorshift64: the same sequence every run, from the test's own seed. */
static inline unsigned long long rnd(void)
{
	rnd_state ^= rnd_state << 13;
	rnd_state ^= rnd_state >> 7;
	rnd_state ^= rnd_state << 17;
	return rnd_state;
}

/* The test's name and seed; -nN on the command line sets naive to N. */
static inline void host_test_init(const char *name, unsigned long long seed,
				  int argc, char **argv)
{
	host_test = name;
	rnd_state = seed;
	if (argc == 2 && argv[1][0] == '-' && argv[1][1] == 'n')
		naive = atoi(argv[1] + 2);
}

/*
 * The exit status: 1 with the count of failed checks on stderr (@wrong
 * names what -nN ran, as it should fail), else 0 and the caller says
 * what passed.
 */
static inline int host_test_failed(const char *wrong)
{
	if (!failures)
		return 0;
	fprintf(stderr, "%s: %llu of %llu checks failed", host_test, failures, checks);
	if (naive)
		fprintf(stderr, " (%s, as it should)", wrong);
	fputc('\n', stderr);
	return 1;
}

#endif /* AFRDMA_HOST_TEST_H */
