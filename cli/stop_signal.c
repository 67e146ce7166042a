/* stop_signal.c — SIGTERM / SIGINT / SIGUSR1 as a request to stop at the next step boundary, and
 * SIGXFSZ ignored so that a write past `ulimit -f` fails with EFBIG (see stop_signal.h). */
#include <signal.h>
#include <string.h>

#include "cli/stop_signal.h"

static volatile sig_atomic_t received;

static void on_stop(int sig)
{
    received = sig;
    signal(sig, SIG_DFL); /* a second signal ends the process */
}

void cli_stop_signal_install(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART; /* a read or write in progress goes on */
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGUSR1, &sa, NULL);
}

void cli_signals_ignore_file_size(void)
{
    signal(SIGXFSZ, SIG_IGN);
}

int cli_stop_signal_received(void)
{
    return received;
}
