/* fuzz_safetensors.c — fuzz target: a safetensors file, as `--init FILE.safetensors` reads it
 * into a model of two tensors ("w" [3, 4] and "b" [4], one unit) on a world of one rank: the
 * header's JSON, names, dtypes, shapes and data offsets, then the values. MPI is initialised
 * once (a singleton, no launcher). */
#include <stdlib.h>

#include "fuzz/fuzz.h"
#include "zeroc/comm.h"
#include "zeroc/config.h"
#include "zeroc/engine.h"
#include "zeroc/mem.h"
#include "zeroc/safetensors.h"

static zc_comm *comm;
static zc_mem *mem;
static zc_engine *engine;

static void finish(void)
{
    zc_engine_destroy(engine);
    zc_mem_destroy(mem);
    zc_comm_finalize(comm);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    zc_err err;
    zc_config cfg;
    zc_config_defaults(&cfg);
    if (zc_comm_init(&comm, argc, argv, &err) ||
        zc_engine_create(&engine, &cfg, comm, mem = zc_mem_create(), &err))
        abort();
    int u = zc_engine_add_unit(engine, "layer");
    zc_engine_add_param(engine, u, "w", 2, (int64_t[]){3, 4}, (zc_init){ZC_INIT_CONST, 0.0f});
    zc_engine_add_param(engine, u, "b", 1, (int64_t[]){4}, (zc_init){ZC_INIT_CONST, 0.0f});
    if (zc_engine_finalize(engine, &err))
        abort();
    atexit(finish);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char path[4300];
    fuzz_write("weights.safetensors", data, size, path, sizeof path);
    zc_err err;
    zc_safetensors_load(engine, path, &err);
    return 0;
}
