/*
 * The interfering task of the --explain ground-truth tests (tests/it/explain_truth.rs):
 * pinned to one CPU at SCHED_FIFO, it busy-spins SPIN_US every EVERY_MS and keeps each
 * spin's start and end (CLOCK_MONOTONIC ns) in memory; on SIGTERM, or after SECONDS (so
 * a test that dies cannot leave it spinning for long), it writes them to LOG, one
 * "start end" line per spin, and exits 0. Nothing but the spin runs between its wakes:
 * writing each line as it went would keep the CPU tens of microseconds longer than the
 * spin it logs.
 *
 *   spinner CPU PRIORITY SPIN_US EVERY_MS SECONDS LOG
 *
 * Built by the test with `cc -O2`; exits 2 on bad arguments, 1 when a call fails.
 */
#define _GNU_SOURCE
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

static volatile sig_atomic_t stop;

static void on_term(int signal)
{
	(void)signal;
	stop = 1;
}

static int64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int main(int argc, char **argv)
{
	if (argc != 7) {
		fprintf(stderr, "usage: spinner CPU PRIORITY SPIN_US EVERY_MS SECONDS LOG\n");
		return 2;
	}
	int cpu = atoi(argv[1]), priority = atoi(argv[2]);
	int64_t spin = atoll(argv[3]) * 1000, every = atoll(argv[4]) * 1000000;
	int64_t lifetime = atoll(argv[5]) * 1000000000;
	FILE *log = fopen(argv[6], "w");
	if (!log || spin <= 0 || every <= spin || lifetime <= 0) {
		fprintf(stderr, "spinner: bad arguments or cannot write %s\n", argv[6]);
		return 2;
	}
	size_t capacity = lifetime / every + 1, spins = 0;
	int64_t *spans = calloc(2 * capacity, sizeof *spans);
	/* No SA_RESTART: SIGTERM ends the sleep it arrives in. */
	struct sigaction term = { .sa_handler = on_term };
	if (!spans || sigaction(SIGTERM, &term, NULL)) {
		perror("spinner");
		return 1;
	}
	memset(spans, 0, 2 * capacity * sizeof *spans);
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	struct sched_param param = { .sched_priority = priority };
	if (sched_setaffinity(0, sizeof set, &set) || sched_setscheduler(0, SCHED_FIFO, &param) ||
	    mlockall(MCL_CURRENT | MCL_FUTURE)) {
		perror("spinner");
		return 1;
	}
	int64_t end = now_ns() + lifetime, next = now_ns() + every;
	while (next < end && spins < capacity && !stop) {
		struct timespec due = { .tv_sec = next / 1000000000, .tv_nsec = next % 1000000000 };
		if (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &due, NULL))
			continue; /* interrupted: stop, or sleep again */
		int64_t start = now_ns(), t;
		do
			t = now_ns();
		while (t - start < spin);
		spans[2 * spins] = start;
		spans[2 * spins + 1] = t;
		spins++;
		next += every;
	}
	for (size_t i = 0; i < spins; i++)
		fprintf(log, "%lld %lld\n", (long long)spans[2 * i], (long long)spans[2 * i + 1]);
	return fclose(log) ? 1 : 0;
}
