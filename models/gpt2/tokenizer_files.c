/* tokenizer_files.c — which tokenizer a --vocab path holds (tokenizer_files.h): the choice between
 * Hugging Face's tokenizer.json and GPT-2's files, made in one place above both loaders. */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "models/gpt2/hf_tokenizer.h"
#include "models/gpt2/tokenizer_files.h"

zc_status tokenizer_files_load(bpe_vocab *v, const char *path, bool need_encode, zc_err *err)
{
    struct stat sb;
    char json[4200];
    const size_t n = strlen(path);
    const bool there = stat(path, &sb) == 0, dir = there && S_ISDIR(sb.st_mode);
    if (there && !dir && n >= 5 && !strcmp(path + n - 5, ".json"))
        return hf_tokenizer_load(v, path, err);
    if (dir && (size_t)snprintf(json, sizeof json, "%s/tokenizer.json", path) < sizeof json &&
        stat(json, &sb) == 0)
        return hf_tokenizer_load(v, json, err);
    return bpe_vocab_load(v, path, need_encode, err); /* names a missing path */
}
