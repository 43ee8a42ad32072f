// orch's libfuse 3 binding: the libfuse side (orch_fuse3.h). Each operation hands its request to the JavaScript thread
// and waits for the answer; init negotiates what the kernel and the mount use.
#include "orch_fuse3.h"

#include <errno.h>
#include <string.h>
#include <time.h>

static mount_t *current_mount(void) {
  return fuse_get_context()->private_data;
}

static int dispatch(req_t *r) {
  mount_t *m = current_mount();
  if (sem_init(&r->done, 0, 0) != 0) return -EIO;
  if (napi_call_threadsafe_function(m->tsfn, r, napi_tsfn_blocking) != napi_ok) {
    sem_destroy(&r->done);
    return -EIO;
  }
  while (sem_wait(&r->done) != 0 && errno == EINTR) {
  }
  sem_destroy(&r->done);
  return r->result;
}

static void *op_init(struct fuse_conn_info *conn, struct fuse_config *cfg) {
  mount_t *m = current_mount();
  // Kernel requests of up to 1 MiB: libfuse derives max_pages from max_write (and caps max_write at its buffer,
  // which is 1 MiB of data). The readahead window can only be lowered from here: it is the mount's bdi
  // read_ahead_kb (128 KiB by default), which src/fuse/mounts.ts raises.
  conn->max_write = m->max_write;
  // The page cache is kept or dropped at each open by JavaScript (keep_cache), not by the kernel comparing mtimes
  // after every getattr: with AUTO_INVAL_DATA the pages the mount itself just wrote are dropped as soon as the
  // server's mtime (set by that very write) is seen.
  conn->want &= ~FUSE_CAP_AUTO_INVAL_DATA;
  // READDIRPLUS through the high-level API costs a lookup (an FSAL GetAttr) per entry: off, as with libfuse 2.9.
  conn->want &= ~FUSE_CAP_READDIRPLUS;
  // open(O_TRUNC) as libfuse 2.9 had it: the kernel truncates first (a setattr, which the FSAL judges and a
  // read-only mount refuses at once), then opens. With ATOMIC_O_TRUNC the truncation would ride on the open, which
  // the daemon answers without an FSAL call, and a refusal would come only at close (`echo y > ro/file` exits 0).
  conn->want &= ~FUSE_CAP_ATOMIC_O_TRUNC;
  if (m->writeback_cache && (conn->capable & FUSE_CAP_WRITEBACK_CACHE)) conn->want |= FUSE_CAP_WRITEBACK_CACHE;
  else conn->want &= ~FUSE_CAP_WRITEBACK_CACHE;
  cfg->attr_timeout = m->attr_timeout;
  cfg->entry_timeout = m->entry_timeout;
  cfg->negative_timeout = m->negative_timeout;
  cfg->kernel_cache = 0;
  cfg->auto_cache = 0;
  cfg->use_ino = 0;
  cfg->nullpath_ok = 0;
  m->got_max_write = conn->max_write;
  m->got_max_readahead = conn->max_readahead;
  m->got_want = conn->want;
  m->got_capable = conn->capable;
  return m;
}

static int op_getattr(const char *path, struct stat *st, struct fuse_file_info *fi) {
  req_t r = {.op = OP_GETATTR, .path = path, .st = st};
  memset(st, 0, sizeof *st);
  return dispatch(&r);
}

static int op_statfs(const char *path, struct statvfs *sv) {
  req_t r = {.op = OP_STATFS, .path = path, .sv = sv};
  memset(sv, 0, sizeof *sv);
  return dispatch(&r);
}

static int op_readdir(const char *path, void *buf, fuse_fill_dir_t filler, off_t off, struct fuse_file_info *fi,
                      enum fuse_readdir_flags flags) {
  req_t r = {.op = OP_READDIR, .path = path, .dirbuf = buf, .filler = filler};
  return dispatch(&r);
}

static int op_open(const char *path, struct fuse_file_info *fi) {
  req_t r = {.op = OP_OPEN, .path = path, .flags = fi->flags};
  int res = dispatch(&r);
  if (res == 0) {
    fi->fh = r.out_fh;
    fi->keep_cache = r.keep_cache;
  }
  return res;
}

static int op_create(const char *path, mode_t mode, struct fuse_file_info *fi) {
  req_t r = {.op = OP_CREATE, .path = path, .mode = mode, .flags = fi->flags};
  int res = dispatch(&r);
  if (res == 0) {
    fi->fh = r.out_fh;
    fi->keep_cache = r.keep_cache;
  }
  return res;
}

static int op_read(const char *path, char *buf, size_t size, off_t off, struct fuse_file_info *fi) {
  req_t r = {.op = OP_READ, .path = path, .rbuf = buf, .size = size, .off = off, .fh = fi ? fi->fh : 0};
  return dispatch(&r);
}

static int op_write(const char *path, const char *buf, size_t size, off_t off, struct fuse_file_info *fi) {
  req_t r = {.op = OP_WRITE, .path = path, .wbuf = buf, .size = size, .off = off, .fh = fi ? fi->fh : 0};
  return dispatch(&r);
}

static int op_truncate(const char *path, off_t size, struct fuse_file_info *fi) {
  mount_t *m = current_mount();
  int f = fi != NULL && m->handlers[OP_FTRUNCATE] != NULL;
  req_t r = {.op = f ? OP_FTRUNCATE : OP_TRUNCATE, .path = path, .off = size, .fh = fi ? fi->fh : 0};
  if (!f && m->handlers[OP_TRUNCATE] == NULL) return -ENOSYS;
  return dispatch(&r);
}

static int op_flush(const char *path, struct fuse_file_info *fi) {
  req_t r = {.op = OP_FLUSH, .path = path, .fh = fi->fh};
  return dispatch(&r);
}

static int op_fsync(const char *path, int datasync, struct fuse_file_info *fi) {
  req_t r = {.op = OP_FSYNC, .path = path, .datasync = datasync, .fh = fi->fh};
  return dispatch(&r);
}

static int op_release(const char *path, struct fuse_file_info *fi) {
  req_t r = {.op = OP_RELEASE, .path = path, .fh = fi->fh};
  return dispatch(&r);
}

static int op_unlink(const char *path) {
  req_t r = {.op = OP_UNLINK, .path = path};
  return dispatch(&r);
}

static int op_rename(const char *from, const char *to, unsigned int flags) {
  // RENAME_NOREPLACE / RENAME_EXCHANGE cannot be made of the FSAL's Rename atomically: refuse them (EINVAL), as the
  // kernel answered them under libfuse 2.9, and tools (coreutils mv) fall back to a plain rename.
  if (flags != 0) return -EINVAL;
  req_t r = {.op = OP_RENAME, .path = from, .path2 = to};
  return dispatch(&r);
}

static int op_mkdir(const char *path, mode_t mode) {
  req_t r = {.op = OP_MKDIR, .path = path, .mode = mode};
  return dispatch(&r);
}

static int op_rmdir(const char *path) {
  req_t r = {.op = OP_RMDIR, .path = path};
  return dispatch(&r);
}

static int op_chmod(const char *path, mode_t mode, struct fuse_file_info *fi) {
  req_t r = {.op = OP_CHMOD, .path = path, .mode = mode};
  return dispatch(&r);
}

static int op_chown(const char *path, uid_t uid, gid_t gid, struct fuse_file_info *fi) {
  req_t r = {.op = OP_CHOWN, .path = path, .uid = uid, .gid = gid};
  return dispatch(&r);
}

/** A timespec of utimensat as milliseconds: UTIME_NOW is now, UTIME_OMIT is NaN. */
static double utime_ms(const struct timespec *ts) {
  if (ts->tv_nsec == UTIME_OMIT) return 0.0 / 0.0;
  if (ts->tv_nsec == UTIME_NOW) {
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    return (double)now.tv_sec * 1000.0 + (double)now.tv_nsec / 1e6;
  }
  return (double)ts->tv_sec * 1000.0 + (double)ts->tv_nsec / 1e6;
}

static int op_utimens(const char *path, const struct timespec tv[2], struct fuse_file_info *fi) {
  req_t r = {.op = OP_UTIMENS, .path = path, .atime_ms = utime_ms(&tv[0]), .mtime_ms = utime_ms(&tv[1])};
  return dispatch(&r);
}


/** Gives libfuse the operations JavaScript implements; the rest answer ENOSYS, as with libfuse 2.9. */
void fill_operations(mount_t *m) {
  m->ops.init = op_init;
  if (m->handlers[OP_GETATTR]) m->ops.getattr = op_getattr;
  if (m->handlers[OP_READDIR]) m->ops.readdir = op_readdir;
  if (m->handlers[OP_OPEN]) m->ops.open = op_open;
  if (m->handlers[OP_CREATE]) m->ops.create = op_create;
  if (m->handlers[OP_READ]) m->ops.read = op_read;
  if (m->handlers[OP_WRITE]) m->ops.write = op_write;
  if (m->handlers[OP_TRUNCATE] || m->handlers[OP_FTRUNCATE]) m->ops.truncate = op_truncate;
  if (m->handlers[OP_FLUSH]) m->ops.flush = op_flush;
  if (m->handlers[OP_FSYNC]) m->ops.fsync = op_fsync;
  if (m->handlers[OP_RELEASE]) m->ops.release = op_release;
  if (m->handlers[OP_UNLINK]) m->ops.unlink = op_unlink;
  if (m->handlers[OP_RENAME]) m->ops.rename = op_rename;
  if (m->handlers[OP_MKDIR]) m->ops.mkdir = op_mkdir;
  if (m->handlers[OP_RMDIR]) m->ops.rmdir = op_rmdir;
  if (m->handlers[OP_CHMOD]) m->ops.chmod = op_chmod;
  if (m->handlers[OP_CHOWN]) m->ops.chown = op_chown;
  if (m->handlers[OP_UTIMENS]) m->ops.utimens = op_utimens;
  if (m->handlers[OP_STATFS]) m->ops.statfs = op_statfs;
}
