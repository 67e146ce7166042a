/* peak.c — this machine's arithmetic peaks, measured: register-only loops of fp32 FMAs (AVX2,
 * AVX-512), bf16 dot products (AVX512_BF16 vdpbf16ps) and AMX bf16 tile products, on 1 thread
 * and on every core (OpenMP), each only where the CPU has it. The benchmarks quote their
 * GFLOP/s against these figures instead of a constant from another machine.
 * Prints one line per unit: "peak <name> <threads> <GFLOP/s>". Run by hand; not a test. */
#include <cpuid.h>
#include <immintrin.h>
#include <omp.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

enum { ITERS = 1 << 25 };

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* 10 independent accumulators hide the FMA latency; returns FLOPs done */
__attribute__((target("avx2,fma"))) static double fma256(void)
{
    __m256 a[10], b = _mm256_set1_ps(1e-7f), c = _mm256_set1_ps(0.999f);
    for (int k = 0; k < 10; k++)
        a[k] = _mm256_set1_ps((float)k);
    for (long i = 0; i < ITERS; i++)
        for (int k = 0; k < 10; k++)
            a[k] = _mm256_fmadd_ps(a[k], c, b);
    float s = 0;
    for (int k = 0; k < 10; k++)
        s += _mm256_cvtss_f32(a[k]);
    return s == 12345.0f ? 0 : 10.0 * ITERS * 8 * 2;
}

__attribute__((target("avx512f"))) static double fma512(void)
{
    __m512 a[10], b = _mm512_set1_ps(1e-7f), c = _mm512_set1_ps(0.999f);
    for (int k = 0; k < 10; k++)
        a[k] = _mm512_set1_ps((float)k);
    for (long i = 0; i < ITERS; i++)
        for (int k = 0; k < 10; k++)
            a[k] = _mm512_fmadd_ps(a[k], c, b);
    float s = 0;
    for (int k = 0; k < 10; k++)
        s += _mm512_cvtss_f32(a[k]);
    return s == 12345.0f ? 0 : 10.0 * ITERS * 16 * 2;
}

/* vdpbf16ps: 16 lanes, each two bf16 products added to an fp32 accumulator: 64 FLOPs */
__attribute__((target("avx512f,avx512bf16"))) static double dpbf16(void)
{
    __m512 a[10];
    __m512bh x = (__m512bh)_mm512_set1_epi16(0x3f80), y = (__m512bh)_mm512_set1_epi16(0x3400);
    for (int k = 0; k < 10; k++)
        a[k] = _mm512_set1_ps((float)k);
    for (long i = 0; i < ITERS; i++)
        for (int k = 0; k < 10; k++)
            a[k] = _mm512_dpbf16_ps(a[k], x, y);
    float s = 0;
    for (int k = 0; k < 10; k++)
        s += _mm512_cvtss_f32(a[k]);
    return s == 12345.0f ? 0 : 10.0 * ITERS * 64;
}

/* AMX: C (16×16 fp32) += A (16×32 bf16) · B (32×16 bf16, pairs): 16·16·32·2 FLOPs a tile op */
typedef struct {
    unsigned char palette, start;
    unsigned char pad[14];
    unsigned short colsb[16];
    unsigned char rows[16];
} tile_config;

__attribute__((target("amx-tile,amx-bf16"))) static double amx(void)
{
    static __attribute__((aligned(64))) unsigned short a[16 * 32], b[16 * 32];
    static __attribute__((aligned(64))) float c[16 * 16];
    tile_config cfg = {.palette = 1};
    for (int t = 0; t < 8; t++) {
        cfg.colsb[t] = 64;
        cfg.rows[t] = 16;
    }
    _tile_loadconfig(&cfg);
    _tile_loadd(4, a, 64);
    _tile_loadd(5, b, 64);
    _tile_loadd(6, a, 64);
    _tile_loadd(7, b, 64);
    _tile_loadd(0, c, 64); /* tile numbers are immediates */
    _tile_loadd(1, c, 64);
    _tile_loadd(2, c, 64);
    _tile_loadd(3, c, 64);
    for (long i = 0; i < ITERS / 4; i++) {
        _tile_dpbf16ps(0, 4, 5);
        _tile_dpbf16ps(1, 4, 7);
        _tile_dpbf16ps(2, 6, 5);
        _tile_dpbf16ps(3, 6, 7);
    }
    _tile_stored(0, c, 64);
    _tile_release();
    return c[0] == 12345.0f ? 0 : (double)ITERS * 16 * 16 * 32 * 2;
}

static int amx_allowed(void)
{
    unsigned a, b, c, d;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d) || !(d & (1u << 22)) || !(d & (1u << 24)))
        return 0;
    /* the kernel hands out the tile state only on request (ARCH_REQ_XCOMP_PERM, XTILEDATA) */
    return syscall(SYS_arch_prctl, 0x1023, 18) == 0;
}

static void run(const char *name, double (*f)(void))
{
    int cores = omp_get_num_procs();
    for (int threads = 1; threads <= cores; threads = threads == cores ? cores + 1 : cores) {
        double flops = 0, t0 = now();
#pragma omp parallel num_threads(threads) reduction(+ : flops)
        {
            if (f == amx && !amx_allowed())
                flops = 0;
            else
                flops = f();
        }
        printf("peak %-18s %d %8.1f GFLOP/s\n", name, threads, flops / (now() - t0) / 1e9);
        fflush(stdout);
    }
}

int main(void)
{
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        run("fp32_fma_avx2", fma256);
    if (__builtin_cpu_supports("avx512f"))
        run("fp32_fma_avx512", fma512);
    unsigned a, b, c, d;
    if (__get_cpuid_count(7, 1, &a, &b, &c, &d) && (a & (1u << 5)))
        run("bf16_dot_avx512", dpbf16);
    if (amx_allowed())
        run("bf16_amx_tiles", amx);
    return 0;
}
