/* init_files.c — a GPT-2's starting weights from an llm.c checkpoint or a Hugging Face GPT-2
 * (init_files.h). */
#include <dirent.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "models/gpt2/init_files.h"
#include "models/gpt2/hf_files.h"
#include "models/gpt2/llmc_files.h"
#include "zeroc/durable.h"
#include "zeroc/safetensors.h"

#define NOT_INIT "not an llm.c GPT-2 checkpoint or a Hugging Face GPT-2"
#define EXPORT_HINT "`zeroc ckpt export %s --format llmc --out FILE.bin`, then --init FILE.bin"

/* Whether dir/name exists. */
static bool has_entry(const char *dir, const char *name)
{
    char path[4200];
    struct stat sb;
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return !stat(path, &sb);
}

/* Whether dir holds an entry named step-… (a save directory's checkpoints). */
static bool has_step_entry(const char *dir)
{
    DIR *d = opendir(dir);
    bool found = false;
    for (struct dirent *e; d && !found && (e = readdir(d));)
        found = !strncmp(e->d_name, "step-", 5);
    if (d)
        closedir(d);
    return found;
}

/* path's directory ("." when it has none) into buf, and its last component into *base. */
static void split_path(const char *path, char *buf, size_t cap, const char **base)
{
    const char *slash = strrchr(path, '/');
    *base = slash ? slash + 1 : path;
    if (!slash)
        snprintf(buf, cap, ".");
    else
        snprintf(buf, cap, "%.*s", slash == path ? 1 : (int)(slash - path), path);
}

/* Whether path (a regular file named `base`) is a save directory's `latest`: it names a step-N. */
static bool is_latest_file(const char *path, const char *base)
{
    if (strcmp(base, "latest"))
        return false;
    char text[8] = "";
    FILE *f = zc_fopen_regular(path, NULL);
    size_t n = f ? fread(text, 1, 5, f) : 0;
    if (f)
        fclose(f);
    return n == 5 && !strncmp(text, "step-", 5);
}

/* Whether `base` is the name of one of a checkpoint's own files. */
static bool is_checkpoint_file_name(const char *base)
{
    return !strcmp(base, "manifest.json") || !strcmp(base, "manifest.sha256") ||
           !strncmp(base, "rank-", 5);
}

zc_status gpt2_init_not_zeroc_output(const char *path, zc_err *err)
{
    struct stat sb;
    if (stat(path, &sb)) /* the readers name a missing file */
        return ZC_OK;
    if (S_ISDIR(sb.st_mode) && has_entry(path, "manifest.json"))
        return zc_err_set(
            err, ZC_EINVAL,
            "--init %s: a checkpoint of zeroc train (it holds manifest.json), " NOT_INIT
            "; to sample from it or start from its weights, export it: " EXPORT_HINT
            " (zeroc train --resume %s continues its run)",
            path, path, path);
    if (S_ISDIR(sb.st_mode) && (has_entry(path, "latest") || has_step_entry(path)))
        return zc_err_set(err, ZC_EINVAL,
                          "--init %s: a save directory of zeroc train (its step-N checkpoints and "
                          "latest), " NOT_INIT "; to sample from its newest checkpoint or start "
                          "from its weights, export it: " EXPORT_HINT
                          " (zeroc train --resume %s continues its run)",
                          path, path, path);
    if (!S_ISREG(sb.st_mode))
        return ZC_OK;
    char dir[4096];
    const char *base;
    split_path(path, dir, sizeof dir, &base);
    if (is_latest_file(path, base))
        return zc_err_set(err, ZC_EINVAL,
                          "--init %s: the file that names the newest checkpoint of zeroc train's "
                          "save directory %s, " NOT_INIT "; to sample from that checkpoint, "
                          "export it: " EXPORT_HINT,
                          path, dir, dir);
    if (is_checkpoint_file_name(base) && has_entry(dir, "manifest.json"))
        return zc_err_set(err, ZC_EINVAL,
                          "--init %s: a file of the zeroc checkpoint %s, " NOT_INIT
                          "; to sample from the checkpoint, export it: " EXPORT_HINT,
                          path, dir, dir);
    if (hf_is_zeroc_weights(path))
        return zc_err_set(
            err, ZC_EINVAL,
            "--init %s: a weights file of zeroc (train --save-weights or ckpt export: "
            "zeroc's tensor names, without the model's heads and vocabulary), " NOT_INIT
            "; to sample, export the run's checkpoint: " EXPORT_HINT
            " (or save one with zeroc train --save-final FILE.bin)",
            path, "CKPT_DIR");
    return ZC_OK;
}

bool gpt2_is_init_file(const char *path)
{
    return !zc_safetensors_is_path(path) || hf_is_checkpoint(path);
}

zc_status gpt2_init_shape(const char *path, gpt2_config *cfg, zc_err *err)
{
    zc_status own = gpt2_init_not_zeroc_output(path, err);
    if (own)
        return own;
    if (hf_is_checkpoint(path))
        return hf_read_config(path, cfg, err);
    llmc_header h;
    zc_status st = llmc_ckpt_read_header(path, &h, err);
    if (!st)
        *cfg = (gpt2_config){.max_seq_len = h.max_seq_len,
                             .vocab_size = h.vocab_size,
                             .padded_vocab_size = h.padded_vocab_size,
                             .num_layers = h.num_layers,
                             .num_heads = h.num_heads,
                             .channels = h.channels};
    return st;
}

void gpt2_init_resolve(const char *path, gpt2_init *out)
{
    *out = (gpt2_init){.err = {0}};
    out->hf = hf_is_checkpoint(path);
    out->decoder = out->hf || !zc_safetensors_is_path(path);
    out->st = out->decoder ? gpt2_init_shape(path, &out->cfg, &out->err)
                           : gpt2_init_not_zeroc_output(path, &out->err);
}

zc_status gpt2_load_init(gpt2_model *m, const char *path, zc_err *err)
{
    return hf_is_checkpoint(path) ? hf_load(gpt2_engine(m), path, gpt2_get_config(m), err)
                                  : gpt2_load_llmc(m, path, err);
}
