/*
 * rtbench's process-creation helper (rtbench sysbench fork-exit, fork-exec, fork-sh).
 *
 * rtbench starts it once per operation. It forks from its own small address space, so the
 * numbers price the kernel's process creation, not rtbench's much larger one. build.rs links
 * it with LMbench's own link line for lat_proc (-O, -lm -ltirpc) and the toolchain's
 * defaults, nothing more, so it maps what lat_proc built on the same machine maps: with a
 * linker that drops unused libraries (--as-needed, Debian's and Ubuntu's default) libc alone,
 * about 23 mappings. What fork copies and exit tears down grows with the mappings, so
 * sysbench stores the helper's mappings and libraries with each fork row.
 *
 * Started with no argument it is the program fork-exec runs: it writes a greeting to its
 * (closed) standard output and exits, like LMbench's hello, which is linked alike.
 *
 * Started with its own path: reads "fork N", "exec N" or "sh N" lines from standard input,
 * makes N processes that way one after another, and answers each line with the nanoseconds
 * that took. It exits when its input ends.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/wait.h>

extern char **environ;

static unsigned long long now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (unsigned long long)t.tv_sec * 1000000000ull + (unsigned long long)t.tv_nsec;
}

/* One process made and waited for: 'f' exits at once, 'e' runs us, 's' runs us through sh. */
static int make_one(char how, char *self)
{
	pid_t pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		char *none[] = { NULL };
		char *run[] = { self, NULL };
		char *sh[] = { "sh", "-c", self, NULL };
		close(1);
		if (how == 'e')
			execve(self, run, none);
		else if (how == 's')
			execve("/bin/sh", sh, environ);
		/* fork+exit ends the child as LMbench's does: exit(), the library's exit handlers
		 * and all. A failed exec leaves at once. */
		if (how == 'f')
			exit(0);
		_exit(127);
	}
	int status;
	if (waitpid(pid, &status, 0) != pid)
		return -1;
	/* A process that could not run what it was given is no measurement. */
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

int main(int argc, char **argv)
{
	char what[8];
	unsigned long long n, i, start;

	if (argc < 2) {
		(void)!write(1, "Hello world\n", 12);
		return 0;
	}
	while (scanf("%7s %llu", what, &n) == 2) {
		char how = !strcmp(what, "fork") ? 'f' : !strcmp(what, "exec") ? 'e' : !strcmp(what, "sh") ? 's' : 0;
		if (!how)
			return 2;
		start = now_ns();
		for (i = 0; i < n; i++)
			if (make_one(how, argv[1]) != 0)
				return 1;
		printf("%llu\n", now_ns() - start);
		fflush(stdout);
	}
	return 0;
}
