/* gemm_packed.c — what GPT-2's bf16 products would gain on this CPU if each weight matrix were
 * reordered once into the layout oneDNN's kernel wants (weights in format "any" and one reorder,
 * as a step could do once per unit after its gather), against the plain row-major weights zeroc
 * hands oneDNN today, which its brgemm kernels copy into their own layout on every call; and what
 * the head's logits block costs when its destination rows are the whole padded vocabulary long
 * (oneDNN 2.6's brgemm matmul declines such a destination and falls back to another kernel)
 * against a dense block. The shapes are GPT-2 124M's at T = 64, B = 4 (M = 256 rows).
 *
 * Prints one line per shape and way: the kernel oneDNN picked and the median GFLOP/s of 30
 * runs after 3 warm-up ones. OMP_NUM_THREADS sets the threads. Run by hand (on the AMX host,
 * packed with relocatable/pack.sh as an extra program); not a test. */
#include <oneapi/dnnl/dnnl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { WARM = 3, RUNS = 30 };

static dnnl_engine_t eng;
static dnnl_stream_t strm;

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

#define CHECK(call)                                                                                \
    do {                                                                                           \
        if ((call) != dnnl_success) {                                                              \
            fprintf(stderr, "gemm_packed: %s failed\n", #call);                                    \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

/* C (M × N, fp32, rows ldc apart) = A (M × K, bf16) · B (K × N, bf16: stored N × K when tb, the
 * way a linear layer's weight is), the weights plain or reordered once ("any"). */
static void run(const char *name, int M, int N, int K, int tb, int ldc, int packed)
{
    dnnl_memory_desc_t a_md, b_md, b_plain, c_md;
    dnnl_dims_t ad = {M, K}, bd = {K, N}, cd = {M, N};
    dnnl_dims_t as = {K, 1}, bs = {tb ? 1 : N, tb ? K : 1}, cs = {ldc, 1};
    CHECK(dnnl_memory_desc_init_by_strides(&a_md, 2, ad, dnnl_bf16, as));
    CHECK(dnnl_memory_desc_init_by_strides(&b_plain, 2, bd, dnnl_bf16, bs));
    if (packed)
        CHECK(dnnl_memory_desc_init_by_tag(&b_md, 2, bd, dnnl_bf16, dnnl_format_tag_any));
    else
        b_md = b_plain;
    CHECK(dnnl_memory_desc_init_by_strides(&c_md, 2, cd, dnnl_f32, cs));
    dnnl_matmul_desc_t md;
    CHECK(dnnl_matmul_desc_init(&md, &a_md, &b_md, NULL, &c_md));
    dnnl_primitive_desc_t pd;
    CHECK(dnnl_primitive_desc_create(&pd, &md, NULL, eng, NULL));
    const char *impl = "?";
    dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl);
    const dnnl_memory_desc_t *b_used = dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
    dnnl_primitive_t prim;
    CHECK(dnnl_primitive_create(&prim, pd));

    uint16_t *A = calloc((size_t)M * K, 2), *B = calloc((size_t)K * N, 2);
    float *C = calloc((size_t)(M - 1) * ldc + N, 4);
    for (size_t i = 0; i < (size_t)M * K; i++)
        A[i] = 0x3f80 + (uint16_t)(i % 64); /* values near 1: no denormals, no overflow */
    for (size_t i = 0; i < (size_t)K * N; i++)
        B[i] = 0x3c00 + (uint16_t)(i % 64);
    dnnl_memory_t am, bm, bplain_m, cm;
    CHECK(dnnl_memory_create(&am, &a_md, eng, A));
    CHECK(dnnl_memory_create(&bplain_m, &b_plain, eng, B));
    CHECK(dnnl_memory_create(&cm, &c_md, eng, C));
    void *packed_buf = NULL;
    double reorder_ms = 0;
    if (packed) { /* the once-per-step reorder, timed once */
        packed_buf = aligned_alloc(64, (dnnl_memory_desc_get_size(b_used) + 63) / 64 * 64);
        CHECK(dnnl_memory_create(&bm, b_used, eng, packed_buf));
        dnnl_primitive_desc_t rpd;
        CHECK(dnnl_reorder_primitive_desc_create(&rpd, &b_plain, eng, b_used, eng, NULL));
        dnnl_primitive_t r;
        CHECK(dnnl_primitive_create(&r, rpd));
        dnnl_exec_arg_t rargs[] = {{DNNL_ARG_FROM, bplain_m}, {DNNL_ARG_TO, bm}};
        for (int k = 0; k < 2; k++) { /* the second, warm, is the one reported */
            double t0 = now();
            CHECK(dnnl_primitive_execute(r, strm, 2, rargs));
            CHECK(dnnl_stream_wait(strm));
            reorder_ms = 1e3 * (now() - t0);
        }
        dnnl_primitive_destroy(r);
        dnnl_primitive_desc_destroy(rpd);
    } else {
        bm = bplain_m;
    }
    dnnl_exec_arg_t args[] = {{DNNL_ARG_SRC, am}, {DNNL_ARG_WEIGHTS, bm}, {DNNL_ARG_DST, cm}};
    double t[RUNS];
    for (int k = 0; k < WARM + RUNS; k++) {
        double t0 = now();
        CHECK(dnnl_primitive_execute(prim, strm, 3, args));
        CHECK(dnnl_stream_wait(strm));
        if (k >= WARM)
            t[k - WARM] = now() - t0;
    }
    qsort(t, RUNS, sizeof *t, cmp);
    const double ms = 1e3 * t[RUNS / 2];
    printf("%-22s %5d x %5d x %5d  %-7s %-30s %8.3f ms %8.1f GFLOP/s", name, M, N, K,
           packed ? "packed" : "plain", impl, ms, 2.0 * M * N * K / (ms * 1e6));
    if (packed)
        printf("  (reorder %.3f ms)", reorder_ms);
    printf("\n");
    fflush(stdout);
    if (packed)
        dnnl_memory_destroy(bm);
    dnnl_memory_destroy(am);
    dnnl_memory_destroy(bplain_m);
    dnnl_memory_destroy(cm);
    dnnl_primitive_destroy(prim);
    dnnl_primitive_desc_destroy(pd);
    free(A);
    free(B);
    free(C);
    free(packed_buf);
}

int main(void)
{
    CHECK(dnnl_engine_create(&eng, dnnl_cpu, 0));
    CHECK(dnnl_stream_create(&strm, eng, dnnl_stream_default_flags));
    /* name, M, N, K, tb: the forward products x · Wᵀ and the MLP's backward dx = dy · W */
    const struct {
        const char *name;
        int M, N, K, tb;
    } shapes[] = {
        {"attn.qkv forward", 256, 2304, 768, 1},   {"attn.proj forward", 256, 768, 768, 1},
        {"mlp.fc forward", 256, 3072, 768, 1},     {"mlp.proj forward", 256, 768, 3072, 1},
        {"mlp.fc backward dx", 256, 768, 3072, 0}, {"mlp.proj backward dx", 256, 3072, 768, 0}};
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++)
        for (int packed = 0; packed < 2; packed++)
            run(shapes[s].name, shapes[s].M, shapes[s].N, shapes[s].K, shapes[s].tb, shapes[s].N,
                packed);
    /* the head's 1024-row block of the tied table: logits rows 50304 long, or a dense block */
    run("head block, rows 50304", 256, 1024, 768, 1, 50304, 0);
    run("head block, dense", 256, 1024, 768, 1, 1024, 0);
    run("head block, dense", 256, 1024, 768, 1, 1024, 1);
    dnnl_stream_destroy(strm);
    dnnl_engine_destroy(eng);
    return 0;
}
