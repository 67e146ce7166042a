/* test_timeout.c — a collective one rank never joins: the others give up after comm_timeout_s
 * with a message naming the collective and its label, and abort every rank (run on 2 ranks;
 * ctest matches the message). Without the timeout this test would hang until ctest kills it. */
#include <stdio.h>
#include <unistd.h>

#include "zeroc/comm.h"

int main(int argc, char **argv)
{
    zc_comm *c;
    zc_err err = {0};
    if (zc_comm_init(&c, &argc, &argv, &err))
        return 1;
    zc_comm_set_timeout(c, 1.0);
    float buf[8] = {0};
    if (zc_comm_rank(c) == 0) {
        zc_status st = zc_comm_all_gather(c, ZC_FP32, buf, 4, "unit 'fc7', step 3", &err);
        fprintf(stderr, "rank 0: %s: %s\n", zc_status_name(st), err.msg);
        fflush(stderr);
        zc_comm_abort(c, 3);
    }
    sleep(60); /* rank 1 never joins; it is stopped by rank 0's abort */
    return 0;
}
