// test_cxx_headers.cpp — a C++ program includes every installed header and links against
// libzeroc: the declarations are extern "C" (without it the calls below would look for
// C++-mangled symbols and fail to link). Runs on one rank.
#include <zeroc/checked.h>
#include <zeroc/checkpoint.h>
#include <zeroc/comm.h>
#include <zeroc/config.h>
#include <zeroc/dtype.h>
#include <zeroc/durable.h>
#include <zeroc/engine.h>
#include <zeroc/estimate.h>
#include <zeroc/gemm.h>
#include <zeroc/lr_schedule.h>
#include <zeroc/mem.h>
#include <zeroc/optim.h>
#include <zeroc/rng.h>
#include <zeroc/safetensors.h>
#include <zeroc/simd.h>
#include <zeroc/status.h>

#include <cstdio>
#include <cstring>

int main()
{
    int failed = 0;
    zc_config cfg;
    zc_config_defaults(&cfg);
    zc_err err = {};
    failed += zc_config_set(&cfg, "zero_optimization.stage", "3", &err) != ZC_OK;
    failed += std::strcmp(zc_status_name(ZC_EINVAL), "ZC_EINVAL") != 0;
    zc_mem *mem = zc_mem_create();
    failed += mem == nullptr;
    zc_mem_destroy(mem);
    zc_engine *e = reinterpret_cast<zc_engine *>(&cfg);
    failed += zc_engine_create(&e, nullptr, nullptr, nullptr, &err) != ZC_EINVAL || e != nullptr;
    zc_engine_destroy(e);
    std::printf("%d passed, %d failed\n", 5 - failed, failed);
    return failed ? 1 : 0;
}
