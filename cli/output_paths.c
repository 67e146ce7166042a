/* output_paths.c — an output must be writable, and may not overwrite the command's own inputs or a
 * checkpoint's files (see output_paths.h). Paths are compared resolved (realpath: links, "..",
 * relative spellings), files by device and inode. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/output_paths.h"

/* path made absolute and free of links: whole when it exists, else its deepest existing
 * ancestor resolved plus the components below it that do not exist yet ("." dropped, ".."
 * taking one back), so that directories a writer would create are placed where they would be.
 * False only when the path is empty or too long. */
static bool resolve(const char *path, char out[PATH_MAX])
{
    if (realpath(path, out))
        return true;
    const size_t n = strlen(path);
    if (!n || n >= PATH_MAX)
        return false;
    char head[PATH_MAX];
    size_t tail = n; /* path[tail..n) is what does not exist */
    for (;;) {
        while (tail > 0 && path[tail - 1] == '/')
            tail--;
        while (tail > 0 && path[tail - 1] != '/')
            tail--;
        size_t a = tail; /* the ancestor: path[0..a), its trailing slashes off */
        while (a > 1 && path[a - 1] == '/')
            a--;
        if (a == 0 && path[0] == '/')
            return false;
        snprintf(head, sizeof head, "%.*s", a ? (int)a : 1, a ? path : ".");
        if (realpath(head, out))
            break;
        if (tail == 0)
            return false;
    }
    size_t len = strlen(out);
    for (size_t i = tail; i < n;) {
        size_t j = i;
        while (j < n && path[j] != '/')
            j++;
        const size_t k = j - i;
        if (k == 2 && path[i] == '.' && path[i + 1] == '.') {
            while (len > 1 && out[len - 1] != '/')
                len--;
            if (len > 1)
                len--;
            out[len] = 0;
        } else if (k && !(k == 1 && path[i] == '.')) {
            const bool root = len == 1 && out[0] == '/';
            if (len + !root + k >= PATH_MAX)
                return false;
            if (!root)
                out[len++] = '/';
            memcpy(out + len, path + i, k);
            out[len += k] = 0;
        }
        i = j + 1;
    }
    return true;
}

zc_status cli_output_writable(const char *flag, const char *path, zc_err *err)
{
    int fd = open(path, O_WRONLY | O_APPEND | O_CLOEXEC);
    bool created = false;
    if (fd < 0 && errno == ENOENT) {
        fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        created = fd >= 0;
    }
    if (fd < 0)
        return zc_err_set(err, ZC_EINVAL, "%s %s: cannot write there: %s", flag, path,
                          strerror(errno));
    close(fd);
    if (created)
        unlink(path);
    return ZC_OK;
}

/* Does existing file o (resolved) lie under directory d (resolved)? */
static bool under(const char *o, const char *d)
{
    size_t n = strlen(d);
    return n == 1 || (!strncmp(o, d, n) && o[n] == '/');
}

zc_status cli_output_not_input(const char *oflag, const char *out, const char *iflag,
                               const char *in, zc_err *err)
{
    struct stat so, si;
    char o[PATH_MAX], d[PATH_MAX];
    if (!out || !in || stat(out, &so) || stat(in, &si))
        return ZC_OK;
    if (so.st_dev == si.st_dev && so.st_ino == si.st_ino)
        return zc_err_set(err, ZC_EINVAL,
                          "%s %s is the same file as %s %s, which the run reads; write it "
                          "elsewhere",
                          oflag, out, iflag, in);
    if (S_ISDIR(si.st_mode) && realpath(out, o) && realpath(in, d) && under(o, d))
        return zc_err_set(err, ZC_EINVAL,
                          "%s %s would overwrite a file of %s %s, which the run reads; write it "
                          "elsewhere",
                          oflag, out, iflag, in);
    return ZC_OK;
}

/* A name zeroc's saves create directly in a save directory. */
static bool save_dir_name(const char *name)
{
    static const char *const prefixes[] = {"latest", ".lock", "step-", ".tmp-step-"};
    for (size_t i = 0; i < sizeof prefixes / sizeof *prefixes; i++)
        if (!strncmp(name, prefixes[i], strlen(prefixes[i])))
            return true;
    return false;
}

zc_status cli_output_outside_checkpoint(const char *oflag, const char *out, const char *cflag,
                                        const char *ckdir, zc_err *err)
{
    char o[PATH_MAX], c[PATH_MAX], manifest[PATH_MAX + 16];
    if (!out || !ckdir || !resolve(out, o) || !realpath(ckdir, c))
        return ZC_OK;
    const size_t n = strlen(c);
    if (strcmp(o, c) && !under(o, c))
        return ZC_OK;                                        /* elsewhere */
    const char *rest = !strcmp(o, c) ? "" : o + n + (n > 1); /* past "c/" ("/": past "/") */
    snprintf(manifest, sizeof manifest, "%s/manifest.json", c);
    struct stat st;
    const bool one_checkpoint = stat(manifest, &st) == 0;
    if (*rest && !strchr(rest, '/') && !one_checkpoint && !save_dir_name(rest))
        return ZC_OK; /* a file of its own beside the step directories */
    return zc_err_set(
        err, ZC_EINVAL,
        "%s %s lies among the checkpoint files of %s %s (it could overwrite them); write it "
        "elsewhere",
        oflag, out, cflag, ckdir);
}
