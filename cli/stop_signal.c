/* stop_signal.c — SIGTERM / SIGINT / SIGUSR1 (under mpirun, mpirun's SIGTERM told apart by its
 * sender) as a request to stop at the next step boundary; SIGXFSZ ignored so that a write past
 * `ulimit -f` fails with EFBIG (see stop_signal.h for why each). */
#include <ctype.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/stop_signal.h"

static bool launched_here;                /* an MPI launcher is the parent */
static volatile sig_atomic_t received;    /* the first request's signal */
static volatile sig_atomic_t from_parent; /* it came from the parent: under mpirun, mpirun's kill */

static void on_stop(int sig, siginfo_t *si, void *ctx)
{
    (void)ctx;
    if (!received) {
        from_parent = si && si->si_pid == getppid();
        received = sig;
    }
    signal(sig, SIG_DFL); /* a second signal ends the process */
}

void cli_stop_signal_install(bool launched)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_stop;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART | SA_SIGINFO; /* a read or write in progress goes on */
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGUSR1, &sa, NULL);
    launched_here = launched;
}

void cli_signals_ignore_file_size(void)
{
    signal(SIGXFSZ, SIG_IGN);
}

int cli_stop_signal_received(void)
{
    return received;
}

const char *cli_stop_signal_name(int sig)
{
    if (sig == SIGTERM && from_parent && launched_here)
        return "mpirun's SIGTERM (mpirun was sent SIGINT or SIGTERM)";
    switch (sig) {
    case SIGTERM: return "SIGTERM";
    case SIGINT: return "SIGINT";
    case SIGUSR1: return "SIGUSR1";
    default: return "a signal";
    }
}

int cli_stop_signal_exit_code(int sig)
{
    return 128 + sig;
}

/* The value of `odls_base_sigkill_timeout = N` in an MCA parameter file, or -1. */
static int timeout_in_file(const char *path)
{
    FILE *f = fopen(path, "r");
    int found = -1;
    char line[512];
    static const char key[] = "odls_base_sigkill_timeout";
    while (f && found < 0 && fgets(line, sizeof line, f)) {
        char *p = line;
        while (isspace((unsigned char)*p))
            p++;
        if (strncmp(p, key, sizeof key - 1))
            continue;
        p += sizeof key - 1;
        while (isspace((unsigned char)*p))
            p++;
        if (*p++ != '=')
            continue;
        char *end;
        long v = strtol(p, &end, 10);
        if (end != p && v >= 0 && v < 1000000)
            found = (int)v;
    }
    if (f)
        fclose(f);
    return found;
}

int cli_launcher_kill_timeout(bool *set)
{
    const char *v = getenv("OMPI_MCA_odls_base_sigkill_timeout");
    char *end;
    long t = v && *v ? strtol(v, &end, 10) : -1;
    if (v && *v && !*end && t >= 0 && t < 1000000) {
        *set = true;
        return (int)t;
    }
    char path[4096];
    const char *home = getenv("HOME");
    int found = -1;
    if (home && snprintf(path, sizeof path, "%s/.openmpi/mca-params.conf", home) < (int)sizeof path)
        found = timeout_in_file(path);
    if (found < 0)
        found = timeout_in_file("/etc/openmpi/openmpi-mca-params.conf");
    *set = found >= 0;
    return found >= 0 ? found : 1;
}
