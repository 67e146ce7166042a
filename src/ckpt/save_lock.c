/* save_lock.c — one job per save directory: an exclusive flock(2) on DIR/.lock, held by rank 0
 * for the whole job (format and contract in zeroc/checkpoint.h).
 *
 * Why it is shaped this way:
 * - Two jobs saving into one directory used to mix their shards and publish a checkpoint that
 *   failed its own CRCs. The checkpoint's name (step-N) and `latest` are the directory's, so
 *   the directory, not a checkpoint, is what a job must own.
 * - flock, not a file's existence: the kernel drops the lock when the holder dies (kill -9
 *   included), so a crash never leaves the directory locked. The file only says who holds it
 *   (pid and host), for the refusal's message.
 * - The holder unlinks the file while still holding the lock. A newcomer may have opened the
 *   old file just before: after its flock succeeds it checks that the path still names the
 *   inode it locked, and starts over if not — otherwise two jobs could each hold "the" lock.
 * - Taking the lock sweeps what crashed saves left (temporary directories and files, partly
 *   removed checkpoints, the old copy of a step saved again): with the lock held, no other job
 *   can be writing them.
 * Only rank 0 holds the lock; every rank learns the outcome, so a refused job stops as one. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "zeroc/checkpoint.h"

struct zc_ckpt_lock {
    int fd;
    char path[4200];
};

static int rm_entry(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb, (void)flag, (void)ftw;
    return remove(p);
}

static void rm_tree(const char *p)
{
    nftw(p, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* What crashed saves leave (src/ckpt/checkpoint.c's publish): .tmp-step-* directories (a save
 * not yet published, or the old copy a same-step swap put there), latest.tmp-* files,
 * .del-step-* (a pruned checkpoint partly removed) — all removed; and .old-step-N, the previous
 * copy of a step saved again on a file system without RENAME_EXCHANGE: removed if step-N was
 * published, put back as step-N if the crash came before (`latest` may name it). */
static void sweep_temporaries(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *de;
    while ((de = readdir(d))) {
        const char *n = de->d_name;
        char p[4400], final[4400];
        snprintf(p, sizeof p, "%s/%s", dir, n);
        if (!strncmp(n, ".old-step-", 10)) {
            snprintf(final, sizeof final, "%s/%s", dir, n + 5);
            if (access(final, F_OK) && errno == ENOENT && !rename(p, final))
                continue;
            rm_tree(p);
        } else if (!strncmp(n, ".tmp-step-", 10) || !strncmp(n, ".del-step-", 10) ||
                   !strncmp(n, "latest.tmp-", 11)) {
            rm_tree(p);
        }
    }
    closedir(d);
}

static zc_status take(const char *dir, zc_ckpt_lock *l, zc_err *err)
{
    /* modes 0777 and 0666 less the umask: a team's umask 002 keeps the directory theirs */
    if (mkdir(dir, 0777) && errno != EEXIST)
        return zc_err_set(err, ZC_EIO, "cannot create save directory '%s': %m", dir);
    snprintf(l->path, sizeof l->path, "%s/.lock", dir);
    for (int attempt = 0; attempt < 16; attempt++) {
        /* O_NOFOLLOW: a symlink planted as .lock would have its target overwritten */
        int fd = open(l->path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0666);
        if (fd < 0 && errno == ELOOP)
            return zc_err_set(err, ZC_EIO,
                              "the lock file %s is a symbolic link: zeroc writes its own lock "
                              "there; remove the link",
                              l->path);
        if (fd < 0)
            return zc_err_set(err, ZC_EIO, "cannot create the lock file %s: %m", l->path);
        if (flock(fd, LOCK_EX | LOCK_NB)) {
            int e = errno;
            char holder[256] = "";
            ssize_t n = e == EWOULDBLOCK ? pread(fd, holder, sizeof holder - 1, 0) : -1;
            close(fd);
            if (e != EWOULDBLOCK)
                return zc_err_set(err, ZC_EIO, "cannot lock %s: %s", l->path, strerror(e));
            holder[n > 0 ? n : 0] = 0;
            holder[strcspn(holder, "\n")] = 0;
            return zc_err_set(err, ZC_EINVAL,
                              "save directory '%s' is in use by another job (%s, "
                              "lock %s): one job saves into a directory at a time; wait for "
                              "it to end or choose another --save-dir",
                              dir, holder[0] ? holder : "its pid and host not yet written",
                              l->path);
        }
        struct stat mine, now;
        if (fstat(fd, &mine) || stat(l->path, &now) || mine.st_dev != now.st_dev ||
            mine.st_ino != now.st_ino) { /* the previous holder removed it meanwhile */
            close(fd);
            continue;
        }
        char host[256] = "?", text[400];
        gethostname(host, sizeof host - 1);
        int len = snprintf(text, sizeof text, "pid %d on host %s\n", (int)getpid(), host);
        /* fsync: on NFS the bytes would sit in this client's cache while the other hosts'
         * ranks read the file back (same_dir_everywhere) and find it empty */
        if (ftruncate(fd, 0) || pwrite(fd, text, (size_t)len, 0) != len || fsync(fd)) {
            int e = errno;
            unlink(l->path);
            close(fd);
            return zc_err_set(err, ZC_EIO, "cannot write the lock file %s: %s", l->path,
                              strerror(e));
        }
        l->fd = fd;
        sweep_temporaries(dir);
        return ZC_OK;
    }
    return zc_err_set(err, ZC_EIO, "cannot lock %s: it keeps being replaced", l->path);
}

/* Every rank reads the lock file rank 0 just wrote ("pid P on host H"): a rank that reads
 * something else, or nothing, has another directory at that path (hosts without a shared file
 * system), where its shards would land apart from the manifest — found now, not at the first
 * save hours later. One control gather of a fixed record per rank. */
static zc_status same_dir_everywhere(zc_comm *comm, const char *dir, zc_err *err)
{
    enum { REC = 160 };
    const int n = zc_comm_size(comm), me = zc_comm_rank(comm);
    if (n == 1)
        return ZC_OK;
    char mine[REC] = "", path[4200], host[64] = "?";
    snprintf(path, sizeof path, "%s/.lock", dir);
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    ssize_t got = fd >= 0 ? pread(fd, mine, REC - 1, 0) : -1;
    if (fd >= 0)
        close(fd);
    mine[got > 0 ? got : 0] = '\0';
    mine[strcspn(mine, "\n")] = '\0';
    char *all = malloc((size_t)n * REC);
    if (!all)
        return zc_err_set(err, ZC_ENOMEM, "out of memory");
    zc_status st = zc_comm_control_gather(comm, mine, all, REC, "checking the save directory", err);
    if (!st && strcmp(mine, all)) {
        gethostname(host, sizeof host - 1);
        st = zc_err_set(err, ZC_EINVAL,
                        "--save-dir '%s' is not the same directory on every host: rank %d (host "
                        "%s) reads %s%s%s where rank 0 wrote its lock (\"%s\"); the ranks of a "
                        "job must save into one shared directory (a network file system mounted "
                        "at the same path on every host)",
                        dir, me, host, mine[0] ? "\"" : "no lock file", mine, mine[0] ? "\"" : "",
                        all);
    }
    free(all);
    return zc_comm_agree(comm, st, "checking the save directory", err);
}

zc_status zc_ckpt_lock_dir(zc_comm *comm, const char *dir, zc_ckpt_lock **out, zc_err *err)
{
    *out = NULL;
    zc_status st = ZC_OK;
    zc_ckpt_lock *l = NULL;
    if (zc_comm_rank(comm) == 0) {
        l = calloc(1, sizeof *l);
        st = l ? take(dir, l, err) : zc_err_set(err, ZC_ENOMEM, "out of memory");
        if (st) {
            free(l);
            l = NULL;
        }
    }
    if (!(st = zc_comm_agree(comm, st, "locking the save directory", err)))
        st = same_dir_everywhere(comm, dir, err);
    if (st) {
        zc_ckpt_unlock_dir(l);
        return st;
    }
    *out = l;
    return ZC_OK;
}

void zc_ckpt_unlock_dir(zc_ckpt_lock *l)
{
    if (!l)
        return;
    unlink(l->path); /* still holding the lock: see the top of this file */
    close(l->fd);
    free(l);
}
