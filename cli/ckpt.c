/* ckpt.c — `zeroc ckpt inspect|verify|export`: look into, check, and convert a sharded
 * checkpoint without training (one process; any world size wrote it). */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/args.h"
#include "cli/commands.h"
#include "cli/fail.h"
#include "cli/output_paths.h"
#include "cli/relaunch.h"
#include "cli/train_ckpt.h"
#include "models/gpt2/lora_merge.h"
#include "models/gpt2/ckpt_shape.h"
#include "models/gpt2/peft_files.h"
#include "models/gpt2/hf_files.h"
#include "models/gpt2/llmc_files.h"
#include "zeroc/checkpoint.h"

/* The export may not overwrite the checkpoint it reads: neither the save directory given (its
 * `latest` and step directories) nor the checkpoint it resolved to (nor, that being a step
 * directory, the other checkpoints beside it), nor any other checkpoint's files; an hf or peft
 * export's --out is a directory, whose two files are checked. */
static zc_status export_not_over_checkpoint(const char *out, const char *format, const char *given,
                                            const char *dir, zc_err *err)
{
    const bool hf = !strcmp(format, "hf"), peft = !strcmp(format, "peft");
    char files[2][4200];
    int n = 1;
    snprintf(files[0], sizeof files[0],
             hf     ? "%s/model.safetensors"
             : peft ? "%s/adapter_model.safetensors"
                    : "%s",
             out);
    if (hf || peft)
        snprintf(files[n++], sizeof files[1], hf ? "%s/config.json" : "%s/adapter_config.json",
                 out);
    zc_status st = ZC_OK;
    for (int i = 0; !st && i < n; i++) {
        st = cli_output_outside_checkpoint("--out", files[i], "checkpoint", given, err);
        if (!st)
            st = cli_output_outside_checkpoint("--out", files[i], "checkpoint", dir, err);
        if (!st) /* any other checkpoint's files too */
            st = cli_output_not_checkpoint("--out", files[i], err);
    }
    return st;
}

/* A GPT-2 checkpoint into llm.c's format: its parameters are llm.c's tensors (h.<l>.<name>
 * is layer l's slab of tensor <name>); the shape the weights do not tell (heads, the real
 * vocabulary) comes from what the trainer stored in the manifest. */
static zc_status export_llmc(const char *dir, const char *base, const char *out, zc_err *err)
{
    zc_ckpt_reader *r;
    zc_status st = zc_ckpt_reader_open(dir, &r, err);
    if (st)
        return st;
    gpt2_config gc;
    hf_base *hb = NULL;
    st = gpt2_checkpoint_shape(r, dir, &gc, err);
    if (!st && base)
        st = hf_base_attach(base, &gc, r, &hb, err);
    if (!st && gc.family[0])
        st = zc_err_set(err, ZC_EINVAL,
                        "%s: a %s checkpoint: llm.c's format holds GPT-2 only (use --format hf "
                        "or safetensors)",
                        dir, gc.family);
    llmc_header h = {3, 0, 0, 0, 0, 0, 0};
    if (!st)
        h = (llmc_header){3,
                          gc.max_seq_len,
                          gc.vocab_size,
                          gc.padded_vocab_size,
                          gc.num_layers,
                          gc.num_heads,
                          gc.channels};
    llmc_ckpt_writer w;
    bool open = false;
    zc_err why;
    if (!st && !(open = !llmc_ckpt_create(&w, out, &h, &why))) {
        *err = why; /* its shape checks name `out`: the fields came from the manifest */
        st = why.code == ZC_EINVAL ? zc_err_set(err, ZC_EINVAL,
                                                "%s/manifest.json: the client "
                                                "fields do not describe a GPT-2: %s",
                                                dir, why.msg)
                                   : why.code;
    }
    size_t sizes[LLMC_NTENSORS] = {0};
    if (!st)
        llmc_tensor_sizes(&h, sizes);
    enum { CHUNK = 1 << 22 };
    float *buf = st ? NULL : malloc((size_t)CHUNK * sizeof(float));
    if (!st && !buf)
        st = zc_err_set(err, ZC_ENOMEM, "out of memory");
    for (int p = 0; !st && p < zc_ckpt_reader_num_params(r); p++) {
        const zc_param_info *pi = zc_ckpt_reader_param(r, p);
        if (lora_is_param(pi->name)) /* LoRA's adapters: merged into their weights */
            continue;
        int tensor = -1, layer = 0, row0 = 0, rows;
        char name[ZC_MAX_NAME], mat[8];
        const bool tile = gpt2_vocab_tile_of(&gc, pi->name, mat, &row0, &rows); /* of wte */
        if (tile)
            snprintf(name, sizeof name, "%s", mat);
        else if (sscanf(pi->name, "h.%d.%95s", &layer, name) != 2)
            snprintf(name, sizeof name, "%s", pi->name);
        for (int t = 0; t < LLMC_NTENSORS; t++)
            if (!strcmp(llmc_tensor_name(t), name))
                tensor = t;
        int layers = tensor >= 2 && tensor <= 13 ? h.num_layers : 1;
        const size_t start = tile ? (size_t)row0 * (size_t)gc.channels : 0;
        if (tensor < 0 || layer < 0 || layer >= layers ||
            (tile ? start + pi->numel > sizes[tensor]
                  : pi->numel * (size_t)layers != sizes[tensor])) {
            st = zc_err_set(err, ZC_EINVAL,
                            "%s: parameter '%s' is not part of a GPT-2 of this "
                            "shape",
                            dir, pi->name);
            break;
        }
        for (size_t at = 0; !st && at < pi->numel; at += CHUNK) {
            size_t k = pi->numel - at < CHUNK ? pi->numel - at : CHUNK;
            if (!(st = lora_merged_read(r, &gc, p, at, k, buf, err)))
                st = llmc_ckpt_write(&w, tensor, start + (size_t)layer * pi->numel + at, k, buf,
                                     err);
        }
    }
    if (open) {
        if (st)
            llmc_ckpt_abort(&w);
        else
            st = llmc_ckpt_finish(&w, err);
    }
    free(buf);
    zc_ckpt_reader_close(r);
    hf_base_close(hb);
    return st;
}

/* The checkpoint argument DIR among argv[3..argc) (NULL when none), wherever it stands among
 * the flags, which go to flags[0..*nflags): the one argument that is neither a flag nor a
 * flag's value. */
static zc_status split_dir(int argc, char **argv, const arg_spec *specs, int nspecs,
                           const char **dir, char **flags, int *nflags, zc_err *err)
{
    *dir = NULL;
    for (int i = 3; i < argc; i++) {
        if (argv[i][0] == '-' && argv[i][1]) {
            flags[(*nflags)++] = argv[i];
            bool takes_value = false; /* "--out FILE": FILE is the flag's */
            for (int k = 0; k < nspecs; k++)
                takes_value |= specs[k].kind != ARG_BOOL && !strcmp(specs[k].flag, argv[i]);
            if (takes_value && i + 1 < argc)
                flags[(*nflags)++] = argv[++i];
        } else if (*dir) {
            return zc_err_set(err, ZC_EINVAL,
                              "zeroc ckpt takes one checkpoint, got '%s' and '%s' (flags take "
                              "one value each)",
                              *dir, argv[i]);
        } else {
            *dir = argv[i];
        }
    }
    return ZC_OK;
}

/* The trainer's record in the manifest of checkpoint dir, range-checked as a resume checks it
 * (cli/train_ckpt.h). */
static zc_status check_trainer_record(const char *dir, zc_err *err)
{
    char *manifest = NULL;
    zc_status st = zc_ckpt_manifest_json(dir, &manifest, err);
    if (!st)
        st = train_ckpt_check_record(dir, manifest, err);
    free(manifest);
    return st;
}

/* zc_ckpt_resolve; a step directory named without the zeros saves write (DIR/step-4 for
 * DIR/step-000004) is told the name that exists. */
static zc_status resolve(const char *path, char *dir, size_t len, zc_err *err)
{
    zc_status st = zc_ckpt_resolve(path, dir, len, err);
    if (!st)
        return st;
    const char *slash = strrchr(path, '/'), *base = slash ? slash + 1 : path;
    long long step;
    char tail, padded[4200], probe[4300];
    struct stat sb;
    if (sscanf(base, "step-%lld%c", &step, &tail) != 1 || step < 0)
        return st;
    snprintf(padded, sizeof padded, "%.*sstep-%06lld", (int)(base - path), path, step);
    snprintf(probe, sizeof probe, "%s/manifest.json", padded);
    if (strcmp(padded, path) && !stat(probe, &sb)) {
        char msg[sizeof err->msg];
        snprintf(msg, sizeof msg, "%s", err->msg);
        zc_err_set(err, st, "%s; did you mean %s? (step directories are named with 6 digits)", msg,
                   padded);
    }
    return st;
}

/* The run's LoRA settings and shape, from its manifest. */
static zc_status checkpoint_shape(const char *dir, gpt2_config *gc, zc_err *err)
{
    zc_ckpt_reader *r;
    zc_status st = zc_ckpt_reader_open(dir, &r, err);
    if (!st)
        st = gpt2_checkpoint_shape(r, dir, gc, err);
    zc_ckpt_reader_close(r);
    return st;
}

/* A LoRA run's adapters as a PEFT adapter directory. */
static zc_status export_peft(const char *dir, const char *out, zc_err *err)
{
    gpt2_config gc;
    zc_status st = checkpoint_shape(dir, &gc, err);
    return st ? st : peft_export(dir, &gc, NULL, out, err);
}

/* llm.c's and Hugging Face's formats hold a model without adapters: a LoRA run's checkpoint goes
 * there merged (--merge-lora: W + (alpha/r)·B·A), or to PEFT's format (the adapters) or zeroc's
 * safetensors (every parameter). A LoRA checkpoint records its frozen base by digest only: the
 * merge reads it from --base, the model the run was trained on. */
static zc_status merge_or_refuse(const char *dir, const char *format, bool merge, const char *base,
                                 zc_err *err)
{
    gpt2_config gc;
    zc_err why = {0};
    const bool lora = !checkpoint_shape(dir, &gc, &why) && gc.lora.r > 0;
    zc_ckpt_reader *r = NULL;
    const int absent = zc_ckpt_reader_open(dir, &r, &why) ? 0 : zc_ckpt_reader_base_params(r);
    zc_ckpt_reader_close(r);
    if (absent && !strcmp(format, "safetensors"))
        return zc_err_set(err, ZC_EINVAL,
                          "%s: a LoRA run's checkpoint holds its adapters, not the frozen base "
                          "(%d tensors, recorded by digest), so not every parameter: export "
                          "--format peft (the adapters), or --format hf --merge-lora --base MODEL",
                          dir, absent);
    if (lora && merge && absent && !base)
        return zc_err_set(err, ZC_EINVAL,
                          "%s: a LoRA run's checkpoint holds its adapters, not the frozen base "
                          "(%d tensors, recorded by digest): --merge-lora needs --base, the "
                          "model the run was trained on (its --init)",
                          dir, absent);
    if (base && !absent)
        return zc_err_set(err, ZC_EINVAL,
                          "--base %s: %s holds every parameter itself (--base is for a LoRA "
                          "run's checkpoint, which holds no base)",
                          base, dir);
    if (lora && !merge && strcmp(format, "safetensors")) /* safetensors: every parameter */
        return zc_err_set(err, ZC_EINVAL,
                          "%s: a LoRA run (r %d): --format %s without --merge-lora would drop its "
                          "adapters; add --merge-lora to write the merged model, or --format peft "
                          "for the adapters (loaded over the base model)",
                          dir, gc.lora.r, format);
    if (merge && !lora)
        return zc_err_set(err, ZC_EINVAL,
                          "--merge-lora: %s has no LoRA adapters to merge (a run of train "
                          "--lora-r)",
                          dir);
    return ZC_OK;
}

int cmd_ckpt(int argc, char **argv)
{
    const char *out = NULL, *format = "safetensors", *dtype = "fp32", *base = NULL;
    bool help = false, merge = false;
    arg_spec specs[] = {
        {"--out", ARG_STR, &out, NULL, "export: the file to write", NULL},
        {"--format", ARG_STR, &format, NULL,
         "export: safetensors (default), llmc (a GPT-2 checkpoint in llm.c's format) or hf (a "
         "GPT-2 as Hugging Face transformers reads it: --out DIR gets model.safetensors and "
         "config.json) or peft (a LoRA run's adapters as PEFT writes them: --out DIR gets "
         "adapter_config.json and adapter_model.safetensors)",
         NULL},
        {"--dtype", ARG_STR, &dtype, NULL, "export to safetensors: fp32 (default) or bf16", NULL},
        {"--merge-lora", ARG_BOOL, &merge, NULL,
         "export --format hf or llmc of a LoRA run: the adapters merged into their weights, "
         "W + (lora_alpha/r)·B·A (as PEFT's merge_and_unload)",
         NULL},
        {"--base", ARG_STR, &base, NULL,
         "export --merge-lora: the model a LoRA run was trained on (its --init: a Hugging Face "
         "directory or file), whose checkpoint holds only the adapters; checked against the "
         "checkpoint's digest of it",
         NULL},
        {"--help", ARG_BOOL, &help, NULL, "print this help", NULL},
    };
    const int nspecs = (int)(sizeof specs / sizeof specs[0]);
    zc_err err = {0};
    if (cli_launcher_rank() != 0) /* one process: no MPI; under mpirun, rank 0 alone acts */
        return 0;
    const char *verb = argc > 2 ? argv[2] : "", *path = NULL;
    zc_status st = ZC_OK;
    bool helped = false; /* `ckpt --help`, and `ckpt VERB ... --help` */
    for (int i = 2; i < argc; i++)
        helped |= !strcmp(argv[i], "--help") || !strcmp(argv[i], "-h");
    if (helped) {
        args_usage("zeroc ckpt inspect DIR | verify DIR | export DIR --out FILE [--format "
                   "safetensors|llmc|hf|peft] [--dtype fp32|bf16] [--merge-lora [--base MODEL]]",
                   specs, nspecs);
        return 0;
    }
    if (strcmp(verb, "inspect") && strcmp(verb, "verify") && strcmp(verb, "export"))
        st = zc_err_set(&err, ZC_EINVAL,
                        "zeroc ckpt: expected inspect, verify or export, got "
                        "'%s'",
                        verb);
    /* the flags, before or after DIR */
    char **flags = calloc((size_t)argc + 1, sizeof *flags);
    int nflags = 0;
    if (!st && !flags)
        st = zc_err_set(&err, ZC_ENOMEM, "out of memory");
    if (!st)
        st = split_dir(argc, argv, specs, nspecs, &path, flags, &nflags, &err);
    if (!st && !path)
        st = zc_err_set(&err, ZC_EINVAL,
                        "zeroc ckpt %s: which checkpoint? (a DIR given to "
                        "--save-dir, or DIR/step-N)",
                        verb);
    if (!st)
        st = args_parse(specs, nspecs, nflags, flags, 0, &err);
    static const char *const export_only[] = {"--out", "--format", "--dtype", "--merge-lora",
                                              "--base"};
    for (size_t i = 0;
         !st && strcmp(verb, "export") && i < sizeof export_only / sizeof *export_only; i++)
        if (args_given(nflags, flags, 0, export_only[i]))
            st = zc_err_set(&err, ZC_EINVAL, "%s is for ckpt export; zeroc ckpt %s does not use it",
                            export_only[i], verb);
    if (!st && !strcmp(verb, "export") && !out)
        st = zc_err_set(&err, ZC_EINVAL, "zeroc ckpt export needs --out FILE");
    if (!st && !strcmp(verb, "export"))
        st = cli_output_named("--out", out, 4000, &err);
    if (!st && strcmp(format, "safetensors") && strcmp(format, "llmc") && strcmp(format, "hf") &&
        strcmp(format, "peft"))
        st = zc_err_set(&err, ZC_EINVAL,
                        "--format: expected safetensors, llmc, hf or peft, got '%s'", format);
    if (!st && strcmp(dtype, "fp32") && strcmp(dtype, "bf16"))
        st = zc_err_set(&err, ZC_EINVAL, "--dtype: expected fp32 or bf16, got '%s'", dtype);
    if (!st && strcmp(format, "safetensors") && strcmp(dtype, "fp32"))
        st = zc_err_set(&err, ZC_EINVAL, "--format %s writes fp32 only", format);
    char dir[4096];
    if (!st)
        st = resolve(path, dir, sizeof dir, &err);
    if (!st && !strcmp(verb, "export"))
        st = export_not_over_checkpoint(out, format, path, dir, &err);
    if (!st && merge && strcmp(format, "hf") && strcmp(format, "llmc"))
        st = zc_err_set(&err, ZC_EINVAL, "--merge-lora is for --format hf or llmc, not %s", format);
    if (!st && base && !merge)
        st = zc_err_set(&err, ZC_EINVAL,
                        "--base is for --merge-lora (the base the adapters merge into)");
    if (!st && !strcmp(verb, "export") && strcmp(format, "peft"))
        st = merge_or_refuse(dir, format, merge, base, &err);
    if (!st) {
        char *summary = NULL;
        const bool looks = !strcmp(verb, "inspect") || !strcmp(verb, "verify");
        if (looks) {
            st = !strcmp(verb, "inspect") ? zc_ckpt_inspect(dir, &summary, &err)
                                          : zc_ckpt_verify(dir, &summary, &err);
            if (!st) /* the trainer's record too: what a resume would take from it */
                st = check_trainer_record(dir, &err);
            if (st) {
                free(summary);
                summary = NULL;
            }
        } else if (!(st = !strcmp(format, "llmc") ? export_llmc(dir, base, out, &err)
                          : !strcmp(format, "hf") ? hf_export_checkpoint(dir, base, out, &err)
                          : !strcmp(format, "peft")
                              ? export_peft(dir, out, &err)
                              : zc_ckpt_export_safetensors(dir, out, !strcmp(dtype, "bf16"),
                                                           &err))) {
            printf("wrote %s from %s\n", out, dir);
        }
        if (summary)
            printf("%s\n", summary);
        free(summary);
    }
    free(flags);
    return st ? cli_fail_alone(&err) : 0;
}
