/*
 * rusage-exec: run a command and report its own CPU time and peak RSS.
 *
 *     rusage-exec REPORT_FILE COMMAND [ARG...]
 *
 * Forks, execs COMMAND, reaps it with wait4() and writes one line to REPORT_FILE:
 *
 *     pid=P utime_us=U stime_us=S maxrss_kib=R status=X
 *
 * Why not just os.wait4() from Python: Linux carries the peak RSS of the memory image a
 * process had before exec() into its ru_maxrss (exec_mmap() folds the old mm's
 * high-water mark into signal->maxrss), and a child forked or vforked from Python
 * starts with Python's image, about 14 MB. Every tool would then report at least
 * Python's RSS. Forked from this small program, the pre-exec image is a few hundred
 * KiB, below any tool's own peak, so ru_maxrss is the tool's.
 *
 * SIGINT, SIGTERM and SIGHUP are forwarded to the child. Exits with the child's exit
 * status (128 + signal number if it was killed by a signal).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

static volatile sig_atomic_t child_pid;

static void forward(int sig)
{
	if (child_pid > 0)
		kill(child_pid, sig);
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: %s REPORT_FILE COMMAND [ARG...]\n", argv[0]);
		return 2;
	}
	FILE *report = fopen(argv[1], "w");
	if (!report) {
		fprintf(stderr, "rusage-exec: %s: %s\n", argv[1], strerror(errno));
		return 2;
	}

	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = forward;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);

	pid_t pid = fork();
	if (pid < 0) {
		fprintf(stderr, "rusage-exec: fork: %s\n", strerror(errno));
		return 2;
	}
	if (pid == 0) {
		signal(SIGINT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		signal(SIGHUP, SIG_DFL);
		execvp(argv[2], argv + 2);
		fprintf(stderr, "rusage-exec: %s: %s\n", argv[2], strerror(errno));
		_exit(127);
	}
	child_pid = pid;

	int status;
	struct rusage ru;
	while (wait4(pid, &status, 0, &ru) < 0) {
		if (errno != EINTR) {
			fprintf(stderr, "rusage-exec: wait4: %s\n", strerror(errno));
			return 2;
		}
	}
	int code = WIFEXITED(status) ? WEXITSTATUS(status)
		 : WIFSIGNALED(status) ? 128 + WTERMSIG(status) : 255;
	fprintf(report, "pid=%d utime_us=%lld stime_us=%lld maxrss_kib=%ld status=%d\n",
		(int)pid,
		(long long)ru.ru_utime.tv_sec * 1000000 + ru.ru_utime.tv_usec,
		(long long)ru.ru_stime.tv_sec * 1000000 + ru.ru_stime.tv_usec,
		ru.ru_maxrss, code);
	fclose(report);
	return code;
}
