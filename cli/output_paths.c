/* output_paths.c — an output must be writable, and may not overwrite the command's own inputs or a
 * checkpoint's files (see output_paths.h). Paths are compared resolved (realpath: links, "..",
 * relative spellings), files by device and inode. */
#include <dirent.h>
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
#include "models/gpt2/llmc_files.h"
#include "zeroc/durable.h"

/* path made absolute and free of links: whole when it exists, else its deepest existing
 * ancestor resolved plus the components below it that do not exist yet ("." dropped, ".."
 * taking one back), so that directories a writer would create are placed where they would be;
 * a link to a file that does not exist yet stands for its target (links: followed so far).
 * False only when the path is empty or too long. */
static bool resolve_in(const char *path, char out[PATH_MAX], int links)
{
    if (realpath(path, out))
        return true;
    const size_t n = strlen(path);
    if (!n || n >= PATH_MAX)
        return false;
    char target[PATH_MAX], next[2 * PATH_MAX];
    const ssize_t t = links < 8 ? readlink(path, target, sizeof target - 1) : -1;
    if (t > 0) { /* a link to a file not made yet: where it points */
        target[t] = 0;
        const char *slash = strrchr(path, '/');
        if (target[0] == '/' || !slash)
            snprintf(next, sizeof next, "%s", target);
        else
            snprintf(next, sizeof next, "%.*s/%s", (int)(slash - path), path, target);
        return strlen(next) < PATH_MAX && resolve_in(next, out, links + 1);
    }
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

static bool resolve(const char *path, char out[PATH_MAX])
{
    return resolve_in(path, out, 0);
}

zc_status cli_output_writable(const char *flag, const char *path, zc_err *err)
{
    /* what the output would replace must be a regular file (zc_durable_open refuses anything
     * else); a FIFO opened for writing here would wait for a reader forever */
    struct stat sb;
    if (!stat(path, &sb) && !S_ISREG(sb.st_mode))
        return zc_err_set(err, ZC_EINVAL, "%s %s: it is %s, not a regular file", flag, path,
                          zc_file_kind(sb.st_mode));
    /* the writer's own refusals (a dangling link, one another user planted, on the path or on
     * its way), made now; what the system refuses is said below, as the open finds it */
    zc_status st = zc_durable_probe(path, err);
    if (st == ZC_EINVAL) {
        char why[sizeof err->msg];
        snprintf(why, sizeof why, "%s", err->msg);
        return zc_err_set(err, ZC_EINVAL, "%s: %s", flag, why);
    }
    int fd = open(path, O_WRONLY | O_APPEND | O_NONBLOCK | O_CLOEXEC);
    bool created = false;
    if (fd < 0 && errno == ENOENT) {
        fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
        created = fd >= 0;
    }
    const char *slash = strrchr(path, '/');
    if (fd < 0 && errno == ENOENT && slash && slash > path) { /* its directory is missing */
        int dlen = (int)(slash - path);
        return zc_err_set(err, ZC_EINVAL,
                          "%s %s: cannot write there: %s (the directory '%.*s' does not exist; "
                          "make it first: mkdir -p %.*s)",
                          flag, path, strerror(ENOENT), dlen, path, dlen, path);
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
    zc_status st = cli_output_not_checkpoint(oflag, out, err);
    if (st || !out || !in || stat(out, &so) || stat(in, &si))
        return st;
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

zc_status cli_output_not_token_files(const char *oflag, const char *out, const char *iflag,
                                     const char *in, zc_err *err)
{
    llmc_tokens t;
    zc_err ignored;
    if (!out || !in || llmc_tokens_open(in, &t, &ignored))
        return ZC_OK;
    zc_status st = ZC_OK;
    for (int k = 0; !st && k < t.nshards; k++)
        st = cli_output_not_input(oflag, out, iflag, t.shard[k].path, err);
    llmc_tokens_close(&t);
    return st;
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

/* Does `dir/name` exist as a file of type `mode` (S_IFREG, S_IFDIR)? */
static bool has(const char *dir, const char *name, mode_t mode)
{
    char p[PATH_MAX + 300];
    struct stat st;
    if (snprintf(p, sizeof p, "%s/%s", dir, name) >= (int)sizeof p)
        return false;
    return stat(p, &st) == 0 && (st.st_mode & S_IFMT) == mode;
}

/* The last component of resolved path p ("" for "/"). */
static const char *base_name(const char *p)
{
    const char *slash = strrchr(p, '/');
    return slash ? slash + 1 : p;
}

/* Is d a checkpoint: does it hold manifest.json, and manifest.sha256 (every checkpoint since
 * format 2) or the name of a step directory? (A manifest.json alone is too common a name.) */
static bool checkpoint_dir(const char *d)
{
    return has(d, "manifest.json", S_IFREG) &&
           (has(d, "manifest.sha256", S_IFREG) || !strncmp(base_name(d), "step-", 5));
}

/* Is d a save directory: a `latest` file, or a step-* checkpoint other than `except`, in it?
 * Sets *step to the newest step directory's name (or latest's), when given. */
static bool save_dir(const char *d, const char *except, char step[256])
{
    bool found = has(d, "latest", S_IFREG);
    DIR *dir = opendir(d);
    char sub[PATH_MAX + 300];
    if (step)
        step[0] = 0;
    for (struct dirent *e; dir && (e = readdir(dir));) {
        if (strncmp(e->d_name, "step-", 5) || (except && !strcmp(e->d_name, except)))
            continue;
        snprintf(sub, sizeof sub, "%s/%s", d, e->d_name);
        if (!has(sub, "manifest.json", S_IFREG))
            continue;
        found = true;
        if (step && strcmp(e->d_name, step) > 0)
            snprintf(step, 256, "%s", e->d_name);
    }
    if (dir)
        closedir(dir);
    return found;
}

/* The checkpoint or save directory resolved path p lies among, into where: p or an ancestor
 * of it is a checkpoint, or is named as a save names its entries (latest, .lock, step-*,
 * .tmp-step-*) in a save directory. */
static bool among_checkpoints(const char *p, char where[PATH_MAX])
{
    char a[PATH_MAX], parent[PATH_MAX];
    snprintf(a, sizeof a, "%s", p);
    while (a[0] == '/' && a[1]) {
        const char *name = base_name(a);
        snprintf(parent, sizeof parent, "%.*s", name - a > 1 ? (int)(name - a - 1) : 1, a);
        if (checkpoint_dir(a)) {
            snprintf(where, PATH_MAX, "%s", a);
            return true;
        }
        if (save_dir_name(name) && save_dir(parent, name, NULL)) {
            snprintf(where, PATH_MAX, "%s", parent);
            return true;
        }
        snprintf(a, sizeof a, "%s", parent);
    }
    return false;
}

zc_status cli_output_named(const char *flag, const char *path, size_t max, zc_err *err)
{
    if (!path)
        return ZC_OK;
    if (!*path)
        return zc_err_set(err, ZC_EINVAL, "%s: the path is empty; give a name", flag);
    const size_t n = strlen(path);
    if (n > max)
        return zc_err_set(err, ZC_EINVAL,
                          "%s: the path is too long (%zu characters; at most %zu): %.64s...", flag,
                          n, max, path);
    return ZC_OK;
}

zc_status cli_output_not_checkpoint(const char *oflag, const char *out, zc_err *err)
{
    char o[PATH_MAX], where[PATH_MAX];
    if (!out || !resolve(out, o) || !among_checkpoints(o, where))
        return ZC_OK;
    return zc_err_set(err, ZC_EINVAL,
                      "%s %s lies among the checkpoint files of %s (it could overwrite them); "
                      "write it elsewhere",
                      oflag, out, where);
}

zc_status cli_outputs_distinct(const char *aflag, const char *a, const char *bflag, const char *b,
                               zc_err *err)
{
    struct stat sa, sb;
    char ra[PATH_MAX], rb[PATH_MAX];
    if (!a || !b)
        return ZC_OK;
    const bool same = !stat(a, &sa) && !stat(b, &sb)
                          ? sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino
                          : resolve(a, ra) && resolve(b, rb) && !strcmp(ra, rb);
    if (same)
        return zc_err_set(err, ZC_EINVAL,
                          "%s %s and %s %s are the same file (one would overwrite the other); "
                          "give each its own",
                          aflag, a, bflag, b);
    return ZC_OK;
}

zc_status cli_save_dir_not_in_checkpoint(const char *flag, const char *dir, zc_err *err)
{
    char d[PATH_MAX], a[PATH_MAX], parent[PATH_MAX];
    if (!dir || !resolve(dir, d))
        return ZC_OK;
    snprintf(a, sizeof a, "%s", d);
    while (a[0] == '/' && a[1]) {
        const char *name = base_name(a);
        snprintf(parent, sizeof parent, "%.*s", name - a > 1 ? (int)(name - a - 1) : 1, a);
        const char *where = strcmp(a, d) ? "lies inside" : "is";
        if (checkpoint_dir(a))
            return zc_err_set(err, ZC_EINVAL,
                              "%s %s %s the checkpoint %s: checkpoints saved there would be "
                              "lost to it (or damage it); give a directory of its own",
                              flag, dir, where, a);
        if (save_dir_name(name) && strcmp(name, "latest") && strncmp(name, ".lock", 5) &&
            save_dir(parent, name, NULL))
            return zc_err_set(err, ZC_EINVAL,
                              "%s %s %s %s, a step directory's name in the save directory %s: "
                              "a checkpoint could be saved there; give a directory of its own",
                              flag, dir, where, a, parent);
        snprintf(a, sizeof a, "%s", parent);
    }
    return ZC_OK;
}

zc_status cli_save_dir_unused(const char *flag, const char *dir, zc_err *err)
{
    char step[256], latest[PATH_MAX + 16], name[256] = "";
    struct stat st;
    if (!dir || stat(dir, &st) || !S_ISDIR(st.st_mode) || !save_dir(dir, NULL, step))
        return ZC_OK;
    snprintf(latest, sizeof latest, "%s/latest", dir);
    FILE *f = has(dir, "latest", S_IFREG) ? fopen(latest, "r") : NULL; /* never a FIFO */
    if (f) {
        if (fgets(name, sizeof name, f))
            name[strcspn(name, "\r\n")] = 0;
        fclose(f);
    }
    return zc_err_set(err, ZC_EINVAL,
                      "%s %s already holds checkpoints (%s: %s): continue them with --resume %s, "
                      "or choose another directory",
                      flag, dir, *name ? "latest" : "newest", *name ? name : step, dir);
}

/* The save directory around checkpoint c (resolved), into parent, when c is a step directory
 * of one (its parent has `latest` or other step-* checkpoints). */
static bool save_dir_around(const char *c, char parent[PATH_MAX])
{
    const char *name = base_name(c);
    if (!*name || name == c)
        return false;
    snprintf(parent, PATH_MAX, "%.*s", name - c > 1 ? (int)(name - c - 1) : 1, c);
    return save_dir(parent, name, NULL);
}

zc_status cli_output_outside_checkpoint(const char *oflag, const char *out, const char *cflag,
                                        const char *ckdir, zc_err *err)
{
    char o[PATH_MAX], c[PATH_MAX], manifest[PATH_MAX + 16], parent[PATH_MAX];
    if (!out || !ckdir || !resolve(out, o) || !realpath(ckdir, c))
        return ZC_OK;
    if (has(c, "manifest.json", S_IFREG) && save_dir_around(c, parent) &&
        cli_output_outside_checkpoint(oflag, out, cflag, parent, err))
        return zc_err_set(err, ZC_EINVAL,
                          "%s %s lies among the checkpoint files of %s %s's save directory %s (it "
                          "could overwrite them); write it elsewhere",
                          oflag, out, cflag, ckdir, parent);
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
