/* A 1 kHz control loop with latlab-periodic: SCHED_FIFO 80 on one CPU, hybrid
 * wake-up (sleep, then spin the last stretch), overruns counted, and a fake control
 * step: a PID controller holding a simulated first-order plant at a set point.
 *
 *     loop [SECONDS [CPU [MARGIN_NS]]]
 *
 * SECONDS: how long to run (default 0: until SIGINT, SIGTERM or SIGHUP); CPU: where to pin
 * the loop (default the last CPU this process may run on); MARGIN_NS: the spin
 * margin (default 0: learned from the first second's wake-ups).
 *
 * At the end it prints one line of key=value pairs: its own count of the cycles it
 * ran and of the periods it spanned, then the library's statistics, times in nanoseconds ("unknown" where the run
 * measured none). Build: see README.md beside this file. */

#define _GNU_SOURCE
#include <latlab/periodic.h>

#include <errno.h>
#include <inttypes.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PERIOD_NS 1000000 /* 1 kHz */

/* A plant dx/dt = (gain * u - x) / tau, stepped once a period, and its PID. */
struct control {
    double x, setpoint, integral, previous_error, output;
    int64_t duration_ns; /* 0: until a signal */
    int64_t first_due_ns, last_due_ns;
    uint64_t cycles;     /* the example's own count, made in the step */
};

static int step(const latlab_cycle *cycle, void *data)
{
    struct control *c = data;
    const double dt = PERIOD_NS / 1e9, tau = 0.05, gain = 2.0;
    const double kp = 1.2, ki = 8.0, kd = 0.002;

    if (c->cycles == 0)
        c->first_due_ns = cycle->due_ns;
    c->cycles++;
    c->last_due_ns = cycle->due_ns;

    double error = c->setpoint - c->x;
    c->integral += error * dt;
    double derivative = (error - c->previous_error) / dt;
    c->previous_error = error;
    c->output = kp * error + ki * c->integral + kd * derivative;
    if (c->output > 10.0)
        c->output = 10.0;
    if (c->output < -10.0)
        c->output = -10.0;
    c->x += dt * (gain * c->output - c->x) / tau;
    if ((cycle->index + 1) % 500 == 0)
        c->setpoint = c->setpoint > 0.5 ? 0.0 : 1.0; /* a square wave, 0.5 s a level */
    /* The last period of the duration: its cycle is the last (the library counts a
     * cycle whose step stops the loop). A wake-up late across it skips to a later
     * period, so cycles + missed = the periods from the first due to the last. */
    return c->duration_ns != 0 && cycle->due_ns - c->first_due_ns >= c->duration_ns - PERIOD_NS;
}

/* The last CPU this process may run on. */
static int last_allowed_cpu(void)
{
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) != 0)
        return -1;
    for (int cpu = CPU_SETSIZE - 1; cpu >= 0; cpu--)
        if (CPU_ISSET(cpu, &set))
            return cpu;
    return -1;
}

static void print_ns(const char *key, int64_t ns)
{
    if (ns == LATLAB_UNKNOWN)
        printf(" %s=unknown", key);
    else
        printf(" %s=%" PRId64, key, ns);
}

static int fail(const char *what, int code)
{
    fprintf(stderr, "loop: %s: %s (%s)\n", what, latlab_periodic_strerror(code),
            latlab_periodic_last_error());
    return 2;
}

int main(int argc, char **argv)
{
    char *end;
    double seconds = argc > 1 ? strtod(argv[1], &end) : 0;
    if (argc > 1 && (*end != '\0' || seconds < 0)) {
        fprintf(stderr, "loop: SECONDS: give a duration in seconds, or 0 to run until a signal\n");
        return 2;
    }
    int cpu = argc > 2 ? atoi(argv[2]) : last_allowed_cpu();
    long long margin = argc > 3 ? atoll(argv[3]) : 0;

    latlab_periodic_config config;
    latlab_periodic_config_default(&config);
    config.period_ns = PERIOD_NS;
    config.cpu = cpu;
    config.policy = LATLAB_POLICY_FIFO;
    config.priority = 80;
    config.method = LATLAB_METHOD_HYBRID;
    config.hybrid_margin_ns = margin;
    config.overrun = LATLAB_OVERRUN_SKIP;
    config.name = "loop.c";

    latlab_periodic *task;
    int rc = latlab_periodic_new(&config, &task);
    if (rc != LATLAB_OK)
        return fail("config", rc);
    const int signals[] = {SIGINT, SIGTERM, SIGHUP};
    rc = latlab_periodic_stop_on_signals(signals, 3);
    if (rc != LATLAB_OK)
        return fail("signals", rc);

    struct control control = {.setpoint = 1.0, .duration_ns = (int64_t)(seconds * 1e9)};
    rc = latlab_periodic_run(task, step, &control);
    if (rc != LATLAB_OK)
        return fail("run", rc);

    latlab_stats s;
    rc = latlab_periodic_stats(task, &s);
    if (rc != LATLAB_OK)
        return fail("stats", rc);
    /* The periods the loop spanned, each run or missed. */
    int64_t periods = control.cycles ? (control.last_due_ns - control.first_due_ns) / PERIOD_NS + 1 : 0;
    printf("loop: own_cycles=%" PRIu64 " periods=%" PRId64 " cycles=%" PRIu64 " missed=%" PRIu64
           " overruns=%" PRIu64,
           control.cycles, periods, s.cycles, s.missed, s.overruns);
    print_ns("wake_p50_ns", s.wake_p50_ns);
    print_ns("wake_p99_ns", s.wake_p99_ns);
    print_ns("wake_max_ns", s.wake_max_ns);
    print_ns("compute_p50_ns", s.compute_p50_ns);
    print_ns("compute_p99_ns", s.compute_p99_ns);
    print_ns("compute_max_ns", s.compute_max_ns);
    print_ns("margin_ns", s.hybrid_margin_ns);
    printf(" plant_x=%.3f\n", control.x);
    latlab_periodic_free(task);
    return 0;
}
