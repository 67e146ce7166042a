/* zeroc/estimate.h — what a run will hold and send per rank, before running it: DESIGN.md's
 * formulas applied to the same padded unit sizes the engine uses, so an estimate equals what
 * the ledger and the comm counters measure, to the byte. The engine's own accounting
 * (zc_engine_state_bytes_for_stage) is computed by these functions.
 *
 *     size_t units[] = {4196352, 4196352};               // Ψ_u of each unit
 *     zc_estimate_in in = {.unit_numel = units, .nunits = 2, .nranks = 4, .stage = 3,
 *                          .moment_floats = 2};           // Adam: m and v
 *     zc_state_bytes b = zc_estimate_states(&in);          // per rank
 *     int64_t sent = zc_estimate_comm_bytes(&in);         // per optimizer step, per rank
 */
#ifndef ZEROC_ESTIMATE_H
#define ZEROC_ESTIMATE_H

#include <stddef.h>
#include <stdint.h>

/* Bytes per rank of each model-state category. */
typedef struct {
    int64_t params, grads, optimizer;
} zc_state_bytes;

typedef struct {
    const size_t *unit_numel; /* Ψ_u per unit, unpadded */
    int nunits, nranks, stage;
    int moment_floats;       /* optimizer state floats per parameter: 2 Adam(W), 1 SGD with
                                momentum, 0 plain SGD */
    int param_bytes;         /* bytes of a stored parameter: 4 fp32, 2 bf16/fp16 (adds an fp32
                                master copy to the optimizer state); 0 means 4 */
    int grad_bytes;          /* bytes of a stored gradient (grad_accum_dtype); 0 means 4 */
    int comm_elem_bytes;     /* bytes of a reduce-scatter element (communication_data_type);
                                0 means 4 */
    int64_t reduce_bucket_size, prefetch_bucket_size, max_live_parameters; /* elements */
} zc_estimate_in;

zc_state_bytes zc_estimate_states(const zc_estimate_in *in);
/* Bytes this rank sends per optimizer step (ring convention), Ψp = Σ padded unit sizes:
 * (C + P)·Ψp·(N−1)/N for stages 1–2 (reduce-scatter of gradients, all-gather of parameters),
 * (C + G)·Ψp·(N−1)/N for stage 0 (it all-gathers the reduced gradients), (C + 2P)·Ψp·(N−1)/N for
 * stage 3 (parameters gathered for forward and for backward); C, G, P the element sizes above:
 * 8·Ψp·(N−1)/N and 12·Ψp·(N−1)/N in fp32. */
int64_t zc_estimate_comm_bytes(const zc_estimate_in *in);
/* Bytes of the reduce-scatter staging (send + receive), the ledger's "comm". */
int64_t zc_estimate_comm_staging(const zc_estimate_in *in);
/* An upper bound of the ledger's "working" peak: full-unit fp32 gradient buffers (stages 2–3,
 * and stages 0–1 with 16-bit gradients), gathered parameters of stage 3 (three units — the tied
 * embedding of a language model can be held across a pass — plus the prefetch allowance, capped
 * by max_live_parameters) and, with 16-bit parameters, the fp32 views of three acquired units. */
int64_t zc_estimate_working_bound(const zc_estimate_in *in);
/* Σ padded unit sizes. */
int64_t zc_estimate_padded_numel(const zc_estimate_in *in);

#endif
