/* test_durable.c — zeroc/durable.h: a writer killed at any moment (half-way through the bytes,
 * or with every byte written but before the commit) leaves the old file intact; a commit
 * replaces it whole; abort and failures leave it alone; writes at offsets land where asked; two
 * writers of one path never share a temporary file; a new file's mode is 0666 less the umask,
 * and a replaced file keeps its own mode (0600 stays 0600, 0664 keeps its group write); a dangling
 * link is refused; a name that became a FIFO before the commit is not replaced. */
#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/check.h"
#include "zeroc/durable.h"

static char dir[256], target[512];

static size_t read_file(const char *path, char *buf, size_t cap)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return (size_t)-1;
    size_t n = fread(buf, 1, cap, f);
    fclose(f);
    return n;
}

static int entries(int *temps)
{
    DIR *d = opendir(dir);
    int n = 0;
    *temps = 0;
    for (struct dirent *e; d && (e = readdir(d));)
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
            n++, *temps += strstr(e->d_name, ".tmp-") != NULL;
    if (d)
        closedir(d);
    return n;
}

static int holds(const char *want)
{
    char buf[1 << 16];
    size_t n = read_file(target, buf, sizeof buf);
    return n == strlen(want) && !memcmp(buf, want, n);
}

/* A child writes `part` bytes of text through a durable file, then is killed (SIGKILL) before
 * it commits; `commit`: it commits first (then exits normally). */
static int child_writes(const char *text, size_t part, int commit)
{
    pid_t pid = fork();
    if (pid == 0) {
        zc_durable *f;
        zc_err err;
        if (zc_durable_open(&f, target, &err) || zc_durable_write(f, text, part, &err))
            _exit(3);
        if (commit)
            _exit(zc_durable_commit(f, &err) ? 4 : 0);
        raise(SIGKILL);
        _exit(5);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    return status;
}

int main(void)
{
    snprintf(dir, sizeof dir, "/tmp/zc_durable_XXXXXX");
    if (!mkdtemp(dir))
        return 1;
    snprintf(target, sizeof target, "%s/weights.bin", dir);
    zc_err err = {0};
    static char v1[40000], v2[50000];
    memset(v1, 'a', sizeof v1 - 1);
    memset(v2, 'b', sizeof v2 - 1);
    int temps;

    CHECK(!zc_durable_write_file(target, v1, strlen(v1), &err) && holds(v1), "v1: %s", err.msg);
    CHECK(entries(&temps) == 1 && temps == 0, "only the file after a commit");

    int s = child_writes(v2, strlen(v2) / 2, 0);
    CHECK(WIFSIGNALED(s) && WTERMSIG(s) == SIGKILL, "the child was killed half-way");
    CHECK(holds(v1), "killed half-way through the bytes: the old file changed");
    s = child_writes(v2, strlen(v2), 0);
    CHECK(WIFSIGNALED(s) && holds(v1), "killed before the commit: the old file changed");
    CHECK(entries(&temps) == 3 && temps == 2, "the killed writers' temporary files are theirs "
                                              "alone (2), beside the file");

    s = child_writes(v2, strlen(v2), 1);
    CHECK(WIFEXITED(s) && WEXITSTATUS(s) == 0 && holds(v2), "a committed write replaces it whole");

    /* abort: nothing changes, nothing is left */
    zc_durable *f;
    CHECK(!zc_durable_open(&f, target, &err), "open: %s", err.msg);
    zc_durable_write(f, v1, 10, &err);
    zc_durable_abort(f);
    CHECK(holds(v2) && entries(&temps) == 3 && temps == 2, "abort left something");
    zc_durable_abort(NULL);

    /* pwrite out of order, then an append continues from the end */
    CHECK(!zc_durable_open(&f, target, &err), "open: %s", err.msg);
    CHECK(!zc_durable_pwrite(f, "world", 5, 6, &err) &&
              !zc_durable_pwrite(f, "hello ", 6, 0, &err) && !zc_durable_write(f, "!", 1, &err) &&
              !zc_durable_commit(f, &err),
          "offsets: %s", err.msg);
    CHECK(holds("hello world!"), "pwrite/write landed elsewhere");

    /* two writers of one path at once: separate temporary files, the later commit wins */
    zc_durable *a, *b;
    CHECK(!zc_durable_open(&a, target, &err) && !zc_durable_open(&b, target, &err), "two opens");
    zc_durable_write(a, "first", 5, &err);
    zc_durable_write(b, "second", 6, &err);
    CHECK(!zc_durable_commit(a, &err) && holds("first"), "first commit");
    CHECK(!zc_durable_commit(b, &err) && holds("second"), "second commit");

    /* modes: a new file 0666 less the umask; a replaced file keeps its mode whatever the umask */
    char fresh[600];
    snprintf(fresh, sizeof fresh, "%s/fresh.json", dir);
    mode_t old_mask = umask(002);
    struct stat sb;
    CHECK(!zc_durable_write_file(fresh, "{}", 2, &err) && !stat(fresh, &sb) &&
              (sb.st_mode & 07777) == 0664,
          "new file under umask 002: mode %o, want 664 (%s)", (unsigned)(sb.st_mode & 07777),
          err.msg);
    umask(022);
    CHECK(!chmod(target, 0600) && !zc_durable_write_file(target, "private", 7, &err) &&
              !stat(target, &sb) && (sb.st_mode & 07777) == 0600 && holds("private"),
          "a 0600 file replaced: mode %o, want 600 (%s)", (unsigned)(sb.st_mode & 07777), err.msg);
    CHECK(!chmod(target, 0664) && !zc_durable_write_file(target, "shared", 6, &err) &&
              !stat(target, &sb) && (sb.st_mode & 07777) == 0664,
          "a 0664 file replaced under umask 022: mode %o, want 664 (%s)",
          (unsigned)(sb.st_mode & 07777), err.msg);
    umask(old_mask);

    /* failures name the file and leave nothing */
    char missing[600];
    snprintf(missing, sizeof missing, "%s/no/such/dir/x.bin", dir);
    zc_status st = zc_durable_write_file(missing, "x", 1, &err);
    CHECK(st == ZC_EIO && strstr(err.msg, missing) && strstr(err.msg, "No such file"),
          "missing directory: %d %s", st, err.msg);
    char into_dir[600];
    snprintf(into_dir, sizeof into_dir, "%s", dir); /* not a regular file: refused up front */
    st = zc_durable_write_file(into_dir, "x", 1, &err);
    CHECK(st != ZC_OK && strstr(err.msg, into_dir) && strstr(err.msg, "is a directory"),
          "over a directory: %d %s", st, err.msg);

    /* a dangling link is refused, its target not created; a name that becomes a FIFO between
     * the open and the commit is not replaced (the commit looks at it again) */
    char link[600], gone[600], late[600];
    snprintf(link, sizeof link, "%s/dangling.bin", dir);
    snprintf(gone, sizeof gone, "%s/gone.bin", dir);
    CHECK(!symlink("gone.bin", link), "symlink");
    st = zc_durable_write_file(link, "x", 1, &err);
    CHECK(st != ZC_OK && strstr(err.msg, link) && strstr(err.msg, "dangling") &&
              access(gone, F_OK) != 0,
          "a dangling link: %d %s", st, err.msg);
    snprintf(late, sizeof late, "%s/late.bin", dir);
    CHECK(!zc_durable_open(&f, late, &err), "open: %s", err.msg);
    CHECK(!mkfifo(late, 0600), "mkfifo");
    st = zc_durable_commit(f, &err);
    CHECK(st != ZC_OK && strstr(err.msg, "FIFO") && !lstat(late, &sb) && S_ISFIFO(sb.st_mode) &&
              entries(&temps) > 0 && temps == 2,
          "a FIFO put in place before the commit: %d %s", st, err.msg);

    /* clean up: the killed writers' temporary files, the target */
    DIR *d = opendir(dir);
    for (struct dirent *e; d && (e = readdir(d));) {
        char p[800];
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
            unlink(p);
    }
    if (d)
        closedir(d);
    rmdir(dir);
    return check_summary();
}
