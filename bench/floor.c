/*
 * floor: the least a periodic wake-up latency measurement can be.
 *
 *     floor CPU PRIORITY PERIOD_NS DURATION_S
 *
 * One thread, pinned to CPU, SCHED_FIFO at PRIORITY, memory locked, /dev/cpu_dma_latency
 * held at 0 (as latlab and cyclictest do by default). The loop sleeps with
 * clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME) to the next deadline, reads
 * CLOCK_MONOTONIC, and stores wake - deadline (ns) into a preallocated, prefaulted
 * array; nothing else happens between wake-ups. A wake-up later than the following
 * deadline counts the deadlines it passed as missed and the loop continues at the next
 * future deadline, so samples + missed = the periods in the measured span.
 *
 * The span starts at the first clock read; the deadlines are start + k * PERIOD_NS for
 * k = 1 .. DURATION_S * 1e9 / PERIOD_NS.
 *
 * At the end it sorts the samples and prints one line of JSON (all values ns,
 * percentiles nearest-rank: the smallest sample with at least p % of samples <= it):
 *
 *     {"samples":N,"missed":M,"early":E,"min":..,"p50":..,"p99":..,"p99.9":..,
 *      "max":..,"mean":..,"dma_latency_held":true}
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define NSEC_PER_SEC 1000000000LL

static int64_t ts_ns(const struct timespec *t)
{
	return (int64_t)t->tv_sec * NSEC_PER_SEC + t->tv_nsec;
}

static struct timespec ns_ts(int64_t ns)
{
	struct timespec t = { .tv_sec = ns / NSEC_PER_SEC, .tv_nsec = ns % NSEC_PER_SEC };
	return t;
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return (x > y) - (x < y);
}

/* Nearest rank: the value at rank ceil(num/den * n), 1-based. */
static int64_t nearest_rank(const int64_t *sorted, size_t n, uint64_t num, uint64_t den)
{
	uint64_t rank = (num * n + den - 1) / den;
	if (rank < 1)
		rank = 1;
	if (rank > n)
		rank = n;
	return sorted[rank - 1];
}

static void die(const char *what)
{
	fprintf(stderr, "floor: %s: %s\n", what, strerror(errno));
	exit(1);
}

int main(int argc, char **argv)
{
	if (argc != 5) {
		fprintf(stderr, "usage: %s CPU PRIORITY PERIOD_NS DURATION_S\n", argv[0]);
		return 2;
	}
	int cpu = atoi(argv[1]);
	int prio = atoi(argv[2]);
	int64_t period = strtoll(argv[3], NULL, 10);
	int64_t duration_s = strtoll(argv[4], NULL, 10);
	if (cpu < 0 || prio < 1 || prio > 99 || period <= 0 || duration_s <= 0) {
		fprintf(stderr, "floor: bad arguments\n");
		return 2;
	}
	int64_t periods = duration_s * NSEC_PER_SEC / period;

	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set))
		die("sched_setaffinity");
	struct sched_param sp = { .sched_priority = prio };
	if (sched_setscheduler(0, SCHED_FIFO, &sp))
		die("sched_setscheduler(SCHED_FIFO)");
	if (mlockall(MCL_CURRENT | MCL_FUTURE))
		die("mlockall");

	/* Same power-management request as cyclictest --latency=0 and latlab's default. */
	int dma_fd = open("/dev/cpu_dma_latency", O_RDWR);
	if (dma_fd >= 0) {
		int32_t zero = 0;
		if (write(dma_fd, &zero, sizeof(zero)) != sizeof(zero)) {
			close(dma_fd);
			dma_fd = -1;
		}
	}

	int64_t *samples = malloc((size_t)periods * sizeof(*samples));
	if (!samples)
		die("malloc");
	memset(samples, 0, (size_t)periods * sizeof(*samples)); /* prefault */

	struct timespec now_ts;
	clock_gettime(CLOCK_MONOTONIC, &now_ts);
	int64_t start = ts_ns(&now_ts);
	int64_t end = start + periods * period;
	int64_t deadline = start + period;
	size_t n = 0;
	uint64_t missed = 0, early = 0;

	while (deadline <= end) {
		struct timespec due = ns_ts(deadline);
		int r;
		while ((r = clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &due, NULL)) == EINTR)
			;
		if (r) {
			errno = r;
			die("clock_nanosleep");
		}
		clock_gettime(CLOCK_MONOTONIC, &now_ts);
		int64_t now = ts_ns(&now_ts);
		int64_t lat = now - deadline;
		samples[n++] = lat;
		if (lat < 0)
			early++;
		/* Deadlines passed by this wake-up: deadline + k*period <= now, k >= 1. */
		int64_t skip = lat >= 0 ? lat / period : 0;
		if (skip > 0) {
			/* Count only deadlines inside the measured span. */
			int64_t in_span = (end - deadline) / period;
			missed += (uint64_t)(skip < in_span ? skip : in_span);
		}
		deadline += (skip + 1) * period;
	}

	if (dma_fd >= 0)
		close(dma_fd);

	if (n == 0) {
		printf("{\"samples\":0,\"missed\":%llu}\n", (unsigned long long)missed);
		return 0;
	}
	long double sum = 0;
	for (size_t i = 0; i < n; i++)
		sum += samples[i];
	qsort(samples, n, sizeof(*samples), cmp_i64);
	printf("{\"samples\":%zu,\"missed\":%llu,\"early\":%llu,\"min\":%lld,\"p50\":%lld,"
	       "\"p99\":%lld,\"p99.9\":%lld,\"max\":%lld,\"mean\":%.1Lf,"
	       "\"dma_latency_held\":%s}\n",
	       n, (unsigned long long)missed, (unsigned long long)early,
	       (long long)samples[0],
	       (long long)nearest_rank(samples, n, 50, 100),
	       (long long)nearest_rank(samples, n, 99, 100),
	       (long long)nearest_rank(samples, n, 999, 1000),
	       (long long)samples[n - 1], sum / n,
	       dma_fd >= 0 ? "true" : "false");
	return 0;
}
