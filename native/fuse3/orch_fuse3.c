// orch's libfuse 3 binding (issue 21): a kernel FUSE mount whose operations are JavaScript callbacks, with what
// libfuse 2.9 (@cocalc/fuse-native) cannot give: 1 MiB kernel requests (max_write, max_pages), a per-open keep_cache
// decided by JavaScript (so a file the mount just wrote is read back from the page cache, and one changed elsewhere is
// dropped at its next open), the kernel's writeback cache when asked for, and fuse_invalidate_path.
//
// libfuse 3's high-level (path-based) API: src/fuse/operations.ts keeps its path-based callbacks unchanged.
// Threads: fuse_loop_mt runs in native threads; each request is handed to the JavaScript thread through one
// napi_threadsafe_function and the native thread waits (a semaphore) until JavaScript calls the reply function it was
// given. A reply function answers once: a second call is ignored, a call after the request was answered by an
// exception is ignored, and a JavaScript exception thrown by a handler answers EIO (and is reported to onError), so
// no handler can crash the process or leave the kernel waiting. Read and write data are not copied: JavaScript gets
// a Buffer over libfuse's own buffer, detached (length 0) once the request is answered, so a Buffer kept past its
// answer can never touch freed memory.
#define FUSE_USE_VERSION 312
#include <fuse.h>
#include <node_api.h>

#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <time.h>
#include <unistd.h>

enum {
  OP_GETATTR,
  OP_READDIR,
  OP_OPEN,
  OP_CREATE,
  OP_READ,
  OP_WRITE,
  OP_TRUNCATE,
  OP_FTRUNCATE,
  OP_FLUSH,
  OP_FSYNC,
  OP_RELEASE,
  OP_UNLINK,
  OP_RENAME,
  OP_MKDIR,
  OP_RMDIR,
  OP_CHMOD,
  OP_CHOWN,
  OP_UTIMENS,
  OP_COUNT,
  /** Not a kernel operation: the loop ended (the mount is gone); tells JavaScript. */
  OP_EXIT = 100,
  /** Not a kernel operation: an invalidation (invalidatePath) is done; calls its JavaScript callback. */
  OP_INVAL_DONE,
};

static const char *OP_NAMES[OP_COUNT] = {
    "getattr", "readdir", "open",    "create", "read",  "write", "truncate", "ftruncate", "flush",
    "fsync",   "release", "unlink",  "rename", "mkdir", "rmdir", "chmod",    "chown",     "utimens",
};

#define ONE_MIB (1024u * 1024u)

typedef struct mount_s {
  struct fuse *fuse;
  struct fuse_operations ops;
  char *mnt;
  napi_threadsafe_function tsfn;
  napi_ref handlers[OP_COUNT];
  napi_ref on_error;
  napi_ref on_exit;
  pthread_t thread;
  /** Guards fuse (set to NULL once the loop has ended and libfuse's state is freed) for fuse_invalidate_path. */
  pthread_mutex_t lock;
  int unmounting;
  /** The threadsafe function was finalized (the loop ended): it must not be touched again. JavaScript thread only. */
  int tsfn_gone;
  /**
   * Owners of this struct: the JavaScript handle, the threadsafe function, the loop thread; the last one frees it. Atomic: the loop thread lets go of it off the JavaScript thread.
   */
  int refs;
  /** Asked for (from JavaScript) and negotiated (in init) values. */
  double attr_timeout, entry_timeout, negative_timeout;
  int writeback_cache;
  unsigned max_write;
  unsigned got_max_write, got_max_readahead, got_want, got_capable;
} mount_t;

typedef struct req_s {
  int op;
  const char *path;
  const char *path2;
  char *rbuf;
  const char *wbuf;
  size_t size;
  off_t off;
  mode_t mode;
  uint64_t fh;
  int flags;
  uid_t uid;
  gid_t gid;
  int datasync;
  double atime_ms, mtime_ms;
  struct stat *st;
  void *dirbuf;
  fuse_fill_dir_t filler;
  /** Answers. */
  int result;
  int keep_cache;
  uint64_t out_fh;
  sem_t done;
  /** OP_INVAL_DONE: the invalidation. */
  void *extra;
} req_t;

typedef struct inval_s {
  mount_t *m;
  char *path;
  int result;
  napi_ref cb;
} inval_t;

/** What a JavaScript reply function holds: the request until it is answered, then NULL. */
typedef struct ticket_s {
  req_t *req;
  napi_ref buf;
} ticket_t;

static void mount_unref(mount_t *m) {
  if (__atomic_sub_fetch(&m->refs, 1, __ATOMIC_SEQ_CST) > 0) return;
  pthread_mutex_destroy(&m->lock);
  free(m->mnt);
  free(m);
}

// ---------------------------------------------------------------------------------------------------------------
// The JavaScript side of a request.

static double num_prop(napi_env env, napi_value obj, const char *name, double dflt) {
  napi_value v;
  napi_valuetype t;
  double d;
  if (napi_get_named_property(env, obj, name, &v) != napi_ok) return dflt;
  if (napi_typeof(env, v, &t) != napi_ok) return dflt;
  if (t == napi_number && napi_get_value_double(env, v, &d) == napi_ok) return d;
  if (t == napi_object) {
    bool is_date = false;
    if (napi_is_date(env, v, &is_date) == napi_ok && is_date && napi_get_date_value(env, v, &d) == napi_ok) return d;
  }
  return dflt;
}

static void ms_to_timespec(double ms, struct timespec *ts) {
  if (ms != ms) ms = 0;  // NaN
  double s = ms / 1000.0;
  ts->tv_sec = (time_t)s;
  if ((double)ts->tv_sec > s) ts->tv_sec -= 1;
  ts->tv_nsec = (long)((ms - (double)ts->tv_sec * 1000.0) * 1e6);
  if (ts->tv_nsec < 0) ts->tv_nsec = 0;
  if (ts->tv_nsec > 999999999) ts->tv_nsec = 999999999;
}

static void fill_stat(napi_env env, napi_value obj, struct stat *st) {
  memset(st, 0, sizeof *st);
  st->st_mode = (mode_t)num_prop(env, obj, "mode", 0);
  st->st_uid = (uid_t)num_prop(env, obj, "uid", 0);
  st->st_gid = (gid_t)num_prop(env, obj, "gid", 0);
  st->st_size = (off_t)num_prop(env, obj, "size", 0);
  st->st_nlink = (nlink_t)num_prop(env, obj, "nlink", 1);
  st->st_ino = (ino_t)num_prop(env, obj, "ino", 0);
  st->st_rdev = (dev_t)num_prop(env, obj, "rdev", 0);
  st->st_blksize = (blksize_t)num_prop(env, obj, "blksize", 4096);
  st->st_blocks = (blkcnt_t)num_prop(env, obj, "blocks", 0);
  ms_to_timespec(num_prop(env, obj, "atime", 0), &st->st_atim);
  ms_to_timespec(num_prop(env, obj, "mtime", 0), &st->st_mtim);
  ms_to_timespec(num_prop(env, obj, "ctime", 0), &st->st_ctim);
}

/** A JavaScript number as an errno answer; anything else is EIO (a handler that answers nonsense). */
static int int_arg(napi_env env, size_t argc, napi_value *argv, size_t i, int dflt_missing) {
  if (i >= argc) return dflt_missing;
  napi_valuetype t;
  if (napi_typeof(env, argv[i], &t) != napi_ok) return -EIO;
  if (t == napi_undefined) return dflt_missing;
  double d;
  if (t != napi_number || napi_get_value_double(env, argv[i], &d) != napi_ok || d != d) return -EIO;
  if (d > 2147483647.0) return 2147483647;
  if (d < -2147483648.0) return -EIO;
  return (int)d;
}

/** Answers the request held by `t` (once) and wakes the native thread waiting for it. */
static void answer(napi_env env, ticket_t *t, int result) {
  req_t *r = t->req;
  if (r == NULL) return;
  t->req = NULL;
  if (t->buf != NULL) {
    // The Buffer was libfuse's memory: detach it, so JavaScript that kept it sees an empty buffer, not freed memory.
    napi_value buf, ab;
    napi_typedarray_type type;
    size_t len, off;
    void *data;
    if (napi_get_reference_value(env, t->buf, &buf) == napi_ok && buf != NULL &&
        napi_get_typedarray_info(env, buf, &type, &len, &data, &ab, &off) == napi_ok) {
      napi_detach_arraybuffer(env, ab);
    }
    napi_delete_reference(env, t->buf);
    t->buf = NULL;
  }
  r->result = result;
  sem_post(&r->done);
}

static napi_value reply_cb(napi_env env, napi_callback_info info) {
  size_t argc = 3;
  napi_value argv[3];
  ticket_t *t;
  if (napi_get_cb_info(env, info, &argc, argv, NULL, (void **)&t) != napi_ok || t == NULL || t->req == NULL) return NULL;
  req_t *r = t->req;
  int res = int_arg(env, argc, argv, 0, 0);
  switch (r->op) {
    case OP_GETATTR: {
      napi_valuetype ty = napi_undefined;
      if (res == 0) {
        if (argc < 2 || napi_typeof(env, argv[1], &ty) != napi_ok || ty != napi_object) res = -EIO;
        else fill_stat(env, argv[1], r->st);
      }
      break;
    }
    case OP_READDIR: {
      if (res != 0 || argc < 2) break;
      bool is_array = false;
      uint32_t n = 0;
      if (napi_is_array(env, argv[1], &is_array) != napi_ok || !is_array || napi_get_array_length(env, argv[1], &n) != napi_ok) {
        res = -EIO;
        break;
      }
      bool have_stats = false;
      if (argc >= 3) napi_is_array(env, argv[2], &have_stats);
      char name[1024];
      for (uint32_t i = 0; i < n; i++) {
        napi_value v;
        size_t len = 0;
        if (napi_get_element(env, argv[1], i, &v) != napi_ok) continue;
        if (napi_get_value_string_utf8(env, v, name, sizeof name, &len) != napi_ok || len == 0 || len >= sizeof name - 1) continue;
        struct stat st;
        struct stat *stp = NULL;
        napi_value sv;
        napi_valuetype ty;
        if (have_stats && napi_get_element(env, argv[2], i, &sv) == napi_ok && napi_typeof(env, sv, &ty) == napi_ok && ty == napi_object) {
          fill_stat(env, sv, &st);
          stp = &st;
        }
        // No FUSE_FILL_DIR_PLUS: libfuse would look each entry up again (one more FSAL call per name).
        if (r->filler(r->dirbuf, name, stp, 0, 0) != 0) break;
      }
      break;
    }
    case OP_OPEN:
    case OP_CREATE: {
      if (res != 0) break;
      double fd = 0;
      if (argc >= 2) napi_get_value_double(env, argv[1], &fd);
      r->out_fh = fd > 0 ? (uint64_t)fd : 0;
      bool keep = false;
      if (argc >= 3) napi_get_value_bool(env, argv[2], &keep);
      r->keep_cache = keep ? 1 : 0;
      break;
    }
    case OP_READ:
    case OP_WRITE:
      // The byte count alone (or a negative errno); never more than asked.
      if (res > 0 && (size_t)res > r->size) res = (int)r->size;
      break;
    default:
      break;
  }
  answer(env, t, res);
  return NULL;
}

static void ticket_finalize(napi_env env, void *data, void *hint) {
  ticket_t *t = data;
  // A reply function collected without ever being called: the handler dropped it. Answer EIO rather than leave the
  // kernel (and a libfuse thread) waiting for good.
  if (t->req != NULL) answer(env, t, -EIO);
  free(t);
}

static void report_error(napi_env env, mount_t *m, const char *op, napi_value err) {
  napi_value fn, argv[2], global;
  if (m->on_error == NULL || napi_get_reference_value(env, m->on_error, &fn) != napi_ok || fn == NULL) return;
  argv[0] = err;
  napi_create_string_utf8(env, op, NAPI_AUTO_LENGTH, &argv[1]);
  napi_get_global(env, &global);
  if (napi_call_function(env, global, fn, 2, argv, NULL) == napi_pending_exception) {
    napi_value ignored;
    napi_get_and_clear_last_exception(env, &ignored);
  }
}

static napi_value mk_num(napi_env env, double d) {
  napi_value v;
  napi_create_double(env, d, &v);
  return v;
}

static napi_value mk_str(napi_env env, const char *s) {
  napi_value v;
  napi_create_string_utf8(env, s, NAPI_AUTO_LENGTH, &v);
  return v;
}

static void call_js(napi_env env, napi_value js_cb, void *context, void *data) {
  mount_t *m = context;
  req_t *r = data;
  if (r->op == OP_INVAL_DONE) {
    inval_t *w = r->extra;
    napi_value fn, global, arg;
    if (env != NULL) {
      if (napi_get_reference_value(env, w->cb, &fn) == napi_ok && fn != NULL) {
        napi_get_global(env, &global);
        arg = mk_num(env, w->result);
        if (napi_call_function(env, global, fn, 1, &arg, NULL) == napi_pending_exception) {
          napi_value ignored;
          napi_get_and_clear_last_exception(env, &ignored);
        }
      }
      napi_delete_reference(env, w->cb);
    }
    free(w->path);
    free(w);
    free(r);
    return;
  }
  if (r->op == OP_EXIT) {
    napi_value fn, global;
    if (env != NULL && m->on_exit != NULL && napi_get_reference_value(env, m->on_exit, &fn) == napi_ok && fn != NULL) {
      napi_get_global(env, &global);
      if (napi_call_function(env, global, fn, 0, NULL, NULL) == napi_pending_exception) {
        napi_value ignored;
        napi_get_and_clear_last_exception(env, &ignored);
      }
    }
    free(r);
    return;
  }
  if (env == NULL) {
    // The environment is going away (process exit): nobody will answer.
    r->result = -EIO;
    sem_post(&r->done);
    return;
  }
  ticket_t *t = calloc(1, sizeof *t);
  napi_value handler, cb, buf = NULL, global;
  if (t == NULL) {
    r->result = -ENOMEM;
    sem_post(&r->done);
    return;
  }
  t->req = r;
  int op = r->op;
  if (napi_get_reference_value(env, m->handlers[op], &handler) != napi_ok || handler == NULL ||
      napi_create_function(env, "reply", NAPI_AUTO_LENGTH, reply_cb, t, &cb) != napi_ok) {
    t->req = NULL;
    free(t);
    r->result = -EIO;
    sem_post(&r->done);
    return;
  }
  if (napi_add_finalizer(env, cb, t, ticket_finalize, NULL, NULL) != napi_ok) {
    // Without a finalizer the ticket would leak once; still answer correctly.
  }
  if (op == OP_READ || op == OP_WRITE) {
    void *p = op == OP_READ ? (void *)r->rbuf : (void *)r->wbuf;
    if (napi_create_external_buffer(env, r->size, p, NULL, NULL, &buf) != napi_ok) {
      // External buffers refused (a runtime that forbids them; Node does not): the request cannot be served.
      answer(env, t, -EIO);
      return;
    }
    napi_create_reference(env, buf, 1, &t->buf);
  }
  napi_value argv[6];
  size_t argc = 0;
  const char *path = r->path;
  switch (op) {
    case OP_GETATTR:
    case OP_READDIR:
    case OP_UNLINK:
    case OP_RMDIR:
      argv[argc++] = mk_str(env, path);
      break;
    case OP_OPEN:
      argv[argc++] = mk_str(env, path);
      argv[argc++] = mk_num(env, r->flags);
      break;
    case OP_CREATE:
    case OP_MKDIR:
    case OP_CHMOD:
      argv[argc++] = mk_str(env, path);
      argv[argc++] = mk_num(env, r->mode);
      break;
    case OP_READ:
    case OP_WRITE:
      argv[argc++] = mk_str(env, path);
      argv[argc++] = mk_num(env, (double)r->fh);
      argv[argc++] = buf;
      argv[argc++] = mk_num(env, (double)r->size);
      argv[argc++] = mk_num(env, (double)r->off);
      break;
    case OP_TRUNCATE:
      argv[argc++] = mk_str(env, path);
      argv[argc++] = mk_num(env, (double)r->off);
      break;
    case OP_FTRUNCATE:
      argv[argc++] = mk_str(env, path);
      argv[argc++] = mk_num(env, (double)r->fh);
      argv[argc++] = mk_num(env, (double)r->off);
      break;
    case OP_FLUSH:
    case OP_RELEASE:
      argv[argc++] = mk_str(env, path);
      argv[argc++] = mk_num(env, (double)r->fh);
      break;
    case OP_FSYNC: {
      napi_value b;
      napi_get_boolean(env, r->datasync != 0, &b);
      argv[argc++] = mk_str(env, path);
      argv[argc++] = b;
      argv[argc++] = mk_num(env, (double)r->fh);
      break;
    }
    case OP_RENAME:
      argv[argc++] = mk_str(env, path);
      argv[argc++] = mk_str(env, r->path2);
      break;
    case OP_CHOWN:
      argv[argc++] = mk_str(env, path);
      argv[argc++] = mk_num(env, (double)(uint32_t)r->uid);
      argv[argc++] = mk_num(env, (double)(uint32_t)r->gid);
      break;
    case OP_UTIMENS:
      argv[argc++] = mk_str(env, path);
      argv[argc++] = mk_num(env, r->atime_ms);
      argv[argc++] = mk_num(env, r->mtime_ms);
      break;
    default:
      break;
  }
  argv[argc++] = cb;
  napi_get_global(env, &global);
  if (napi_call_function(env, global, handler, argc, argv, NULL) != napi_ok) {
    bool pending = false;
    napi_is_exception_pending(env, &pending);
    if (pending) {
      napi_value err;
      napi_get_and_clear_last_exception(env, &err);
      report_error(env, m, OP_NAMES[op], err);
    }
    answer(env, t, -EIO);
  }
}

// ---------------------------------------------------------------------------------------------------------------
// The libfuse side: each operation hands its request to JavaScript and waits for the answer.

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

// ---------------------------------------------------------------------------------------------------------------
// The loop thread and the exported functions.

static void *loop_thread(void *data) {
  mount_t *m = data;
  // Signals are the JavaScript thread's business (SIGTERM unmounts); libfuse's threads inherit this mask.
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, NULL);
  struct fuse_loop_config *cfg = fuse_loop_cfg_create();
  if (cfg != NULL) {
    // Up to 16 requests in flight (reads of several files, the kernel's readahead, a writer's next block).
    fuse_loop_cfg_set_max_threads(cfg, 16);
    fuse_loop_cfg_set_idle_threads(cfg, 4);
  }
  fuse_loop_mt(m->fuse, cfg);
  if (cfg != NULL) fuse_loop_cfg_destroy(cfg);
  pthread_mutex_lock(&m->lock);
  struct fuse *f = m->fuse;
  m->fuse = NULL;
  pthread_mutex_unlock(&m->lock);
  // The kernel ended the connection (the mount was detached and nothing uses it any more). No fuse_unmount: the mount
  // is gone, and the path may already hold a new mount of the same volume, which it must not detach. fuse_destroy
  // closes /dev/fuse; were the connection still up (a read error other than ENODEV), that ends it and the mount
  // answers ENOTCONN, which src/fuse/mounts.ts detaches before mounting there again.
  fuse_destroy(f);
  req_t *exit_req = calloc(1, sizeof *exit_req);
  if (exit_req != NULL) {
    exit_req->op = OP_EXIT;
    if (napi_call_threadsafe_function(m->tsfn, exit_req, napi_tsfn_blocking) != napi_ok) free(exit_req);
  }
  napi_release_threadsafe_function(m->tsfn, napi_tsfn_release);
  mount_unref(m);
  return NULL;
}

/** Drops the references to JavaScript values a mount holds. */
static void drop_refs(napi_env env, mount_t *m) {
  for (int i = 0; i < OP_COUNT; i++)
    if (m->handlers[i] != NULL) napi_delete_reference(env, m->handlers[i]);
  if (m->on_error != NULL) napi_delete_reference(env, m->on_error);
  if (m->on_exit != NULL) napi_delete_reference(env, m->on_exit);
  memset(m->handlers, 0, sizeof m->handlers);
  m->on_error = m->on_exit = NULL;
}

static void tsfn_finalize(napi_env env, void *data, void *hint) {
  mount_t *m = hint;
  m->tsfn_gone = 1;
  drop_refs(env, m);
  mount_unref(m);
}

static void handle_finalize(napi_env env, void *data, void *hint) {
  mount_unref(data);
}

static napi_value throw_error(napi_env env, const char *msg) {
  napi_throw_error(env, NULL, msg);
  return NULL;
}

static char *str_prop(napi_env env, napi_value obj, const char *name) {
  napi_value v;
  napi_valuetype t;
  size_t len;
  if (napi_get_named_property(env, obj, name, &v) != napi_ok || napi_typeof(env, v, &t) != napi_ok || t != napi_string) return NULL;
  if (napi_get_value_string_utf8(env, v, NULL, 0, &len) != napi_ok) return NULL;
  char *s = malloc(len + 1);
  if (s != NULL) napi_get_value_string_utf8(env, v, s, len + 1, &len);
  return s;
}

static int bool_prop(napi_env env, napi_value obj, const char *name) {
  napi_value v;
  bool b = false;
  if (napi_get_named_property(env, obj, name, &v) != napi_ok) return 0;
  if (napi_get_value_bool(env, v, &b) != napi_ok) return 0;
  return b ? 1 : 0;
}

/** An option value for `-o`: commas would split it, so they are refused. */
static int safe_opt(const char *s) {
  return s != NULL && strchr(s, ',') == NULL && strlen(s) < 256;
}

/** mount(mountpoint, options, handlers, onError, onExit) → handle. Throws when libfuse refuses. */
static napi_value js_mount(napi_env env, napi_callback_info info) {
  size_t argc = 5;
  napi_value argv[5];
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc < 5) return throw_error(env, "mount(mnt, options, handlers, onError, onExit)");
  size_t len;
  if (napi_get_value_string_utf8(env, argv[0], NULL, 0, &len) != napi_ok) return throw_error(env, "mountpoint must be a string");
  mount_t *m = calloc(1, sizeof *m);
  if (m == NULL) return throw_error(env, "out of memory");
  m->mnt = malloc(len + 1);
  napi_get_value_string_utf8(env, argv[0], m->mnt, len + 1, &len);
  pthread_mutex_init(&m->lock, NULL);
  m->refs = 1;
  m->attr_timeout = num_prop(env, argv[1], "attrTimeout", 1);
  m->entry_timeout = num_prop(env, argv[1], "entryTimeout", 1);
  m->negative_timeout = num_prop(env, argv[1], "negativeTimeout", 1);
  m->writeback_cache = bool_prop(env, argv[1], "writebackCache");
  double mw = num_prop(env, argv[1], "maxWrite", ONE_MIB);
  m->max_write = mw >= 4096 && mw <= ONE_MIB ? (unsigned)mw : ONE_MIB;

  for (int i = 0; i < OP_COUNT; i++) {
    napi_value fn;
    napi_valuetype t;
    if (napi_get_named_property(env, argv[2], OP_NAMES[i], &fn) == napi_ok && napi_typeof(env, fn, &t) == napi_ok && t == napi_function)
      napi_create_reference(env, fn, 1, &m->handlers[i]);
  }
  napi_create_reference(env, argv[3], 1, &m->on_error);
  napi_create_reference(env, argv[4], 1, &m->on_exit);

  // Only what JavaScript implements is given to libfuse: the rest answers ENOSYS, as with libfuse 2.9.
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

  char *fsname = str_prop(env, argv[1], "fsname");
  char *subtype = str_prop(env, argv[1], "subtype");
  char opts[700];
  int n = 0;
  opts[0] = '\0';
  if (bool_prop(env, argv[1], "allowOther")) n += snprintf(opts + n, sizeof opts - n, "%sallow_other", n ? "," : "");
  if (safe_opt(fsname)) n += snprintf(opts + n, sizeof opts - n, "%sfsname=%s", n ? "," : "", fsname);
  if (safe_opt(subtype)) n += snprintf(opts + n, sizeof opts - n, "%ssubtype=%s", n ? "," : "", subtype);
  free(fsname);
  free(subtype);

  struct fuse_args args = FUSE_ARGS_INIT(0, NULL);
  fuse_opt_add_arg(&args, "orch-fuse3");
  if (n > 0) {
    fuse_opt_add_arg(&args, "-o");
    fuse_opt_add_arg(&args, opts);
  }
  if (bool_prop(env, argv[1], "debug")) fuse_opt_add_arg(&args, "-d");
  m->fuse = fuse_new(&args, &m->ops, sizeof m->ops, m);
  fuse_opt_free_args(&args);
  if (m->fuse == NULL) {
    drop_refs(env, m);
    mount_unref(m);
    return throw_error(env, "fuse_new failed (bad options)");
  }
  if (fuse_mount(m->fuse, m->mnt) != 0) {
    fuse_destroy(m->fuse);
    drop_refs(env, m);
    mount_unref(m);
    return throw_error(env, "fuse_mount failed (the mountpoint is missing or busy, or /dev/fuse cannot be opened)");
  }
  napi_value name;
  napi_create_string_utf8(env, "orch-fuse3", NAPI_AUTO_LENGTH, &name);
  if (napi_create_threadsafe_function(env, NULL, NULL, name, 0, 1, m, tsfn_finalize, m, call_js, &m->tsfn) != napi_ok) {
    fuse_unmount(m->fuse);
    fuse_destroy(m->fuse);
    drop_refs(env, m);
    mount_unref(m);
    return throw_error(env, "napi_create_threadsafe_function failed");
  }
  // From here the threadsafe function owns a reference (its finalizer drops it) and the loop thread another.
  m->refs = 3;
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  // Detached: nothing waits for it (a join at exit could hang on a connection still in use); it lets go of `m` last.
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  int started = pthread_create(&m->thread, &attr, loop_thread, m);
  pthread_attr_destroy(&attr);
  if (started != 0) {
    fuse_unmount(m->fuse);
    fuse_destroy(m->fuse);
    m->fuse = NULL;
    m->refs = 2;
    napi_release_threadsafe_function(m->tsfn, napi_tsfn_abort);
    mount_unref(m);
    return throw_error(env, "pthread_create failed");
  }
  napi_value handle;
  napi_create_external(env, m, handle_finalize, NULL, &handle);
  return handle;
}

static mount_t *get_handle(napi_env env, napi_value v) {
  void *p = NULL;
  napi_valuetype t;
  if (napi_typeof(env, v, &t) != napi_ok || t != napi_external) return NULL;
  napi_get_value_external(env, v, &p);
  return p;
}

/**
 * unmount(handle) → 0 or an errno. Detaches the mount (MNT_DETACH, as `fusermount -uz` and @cocalc/fuse-native do):
 * the kernel ends the connection once nothing in the mount is in use, which ends the loop; until then files still
 * open in it are served. EPERM (not root): the caller runs `fusermount3 -uz`.
 */
static napi_value js_unmount(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  mount_t *m = argc >= 1 ? get_handle(env, argv[0]) : NULL;
  if (m == NULL) return throw_error(env, "unmount(handle)");
  int err = 0;
  if (!m->unmounting) {
    m->unmounting = 1;
    if (umount2(m->mnt, MNT_DETACH) != 0 && errno != EINVAL && errno != ENOENT) err = errno;
    // A connection still in use must not keep the process alive after Unmount.
    if (!m->tsfn_gone) napi_unref_threadsafe_function(env, m->tsfn);
  }
  return mk_num(env, err);
}

/** info(handle) → what init negotiated with the kernel (0s before the kernel's INIT was answered). */
static napi_value js_info(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1], out;
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  mount_t *m = argc >= 1 ? get_handle(env, argv[0]) : NULL;
  if (m == NULL) return throw_error(env, "info(handle)");
  napi_create_object(env, &out);
  napi_set_named_property(env, out, "maxWrite", mk_num(env, m->got_max_write));
  napi_set_named_property(env, out, "maxReadahead", mk_num(env, m->got_max_readahead));
  napi_value b;
  napi_get_boolean(env, (m->got_want & FUSE_CAP_WRITEBACK_CACHE) != 0, &b);
  napi_set_named_property(env, out, "writebackCache", b);
  napi_get_boolean(env, (m->got_want & FUSE_CAP_AUTO_INVAL_DATA) != 0, &b);
  napi_set_named_property(env, out, "autoInvalData", b);
  return out;
}

static void *inval_thread(void *data) {
  inval_t *w = data;
  mount_t *m = w->m;
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, NULL);
  // fuse_invalidate_path writes to /dev/fuse, and the kernel may wait there for pages locked by a read whose answer
  // comes from the JavaScript thread: never on that thread. Nor on libuv's pool, which the process's own file system
  // calls may fill. The lock keeps the loop thread from freeing libfuse meanwhile.
  pthread_mutex_lock(&m->lock);
  w->result = m->fuse != NULL ? fuse_invalidate_path(m->fuse, w->path) : -ENOTCONN;
  pthread_mutex_unlock(&m->lock);
  req_t *r = calloc(1, sizeof *r);
  if (r != NULL) {
    r->op = OP_INVAL_DONE;
    r->extra = w;
    if (napi_call_threadsafe_function(m->tsfn, r, napi_tsfn_blocking) != napi_ok) free(r);
  }
  napi_release_threadsafe_function(m->tsfn, napi_tsfn_release);
  return NULL;
}

/**
 * invalidatePath(handle, path, cb(result)) → undefined, or a negative errno at once (the mount is gone). Drops the
 * kernel's cached attributes and pages of a path (0, or -ENOENT when the kernel holds nothing of it).
 */
static napi_value js_invalidate_path(napi_env env, napi_callback_info info) {
  size_t argc = 3;
  napi_value argv[3];
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
  mount_t *m = argc >= 3 ? get_handle(env, argv[0]) : NULL;
  size_t len;
  if (m == NULL || napi_get_value_string_utf8(env, argv[1], NULL, 0, &len) != napi_ok) return throw_error(env, "invalidatePath(handle, path, cb)");
  // Under the lock, a live libfuse means the loop thread has not let go of the threadsafe function yet: taking a
  // share of it here keeps it (and `m`) until the invalidation thread lets go.
  pthread_mutex_lock(&m->lock);
  int alive = m->fuse != NULL && !m->tsfn_gone && napi_acquire_threadsafe_function(m->tsfn) == napi_ok;
  pthread_mutex_unlock(&m->lock);
  if (!alive) return mk_num(env, -ENOTCONN);
  inval_t *w = calloc(1, sizeof *w);
  if (w != NULL) w->path = malloc(len + 1);
  pthread_t th;
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  if (w == NULL || w->path == NULL) goto fail;
  w->m = m;
  napi_get_value_string_utf8(env, argv[1], w->path, len + 1, &len);
  if (napi_create_reference(env, argv[2], 1, &w->cb) != napi_ok) goto fail;
  if (pthread_create(&th, &attr, inval_thread, w) != 0) {
    napi_delete_reference(env, w->cb);
    goto fail;
  }
  pthread_attr_destroy(&attr);
  return NULL;
fail:
  pthread_attr_destroy(&attr);
  if (w != NULL) free(w->path);
  free(w);
  napi_release_threadsafe_function(m->tsfn, napi_tsfn_release);
  return mk_num(env, -ENOMEM);
}

static napi_value init_module(napi_env env, napi_value exports) {
  napi_property_descriptor props[] = {
      {"mount", NULL, js_mount, NULL, NULL, NULL, napi_default, NULL},
      {"unmount", NULL, js_unmount, NULL, NULL, NULL, napi_default, NULL},
      {"info", NULL, js_info, NULL, NULL, NULL, napi_default, NULL},
      {"invalidatePath", NULL, js_invalidate_path, NULL, NULL, NULL, napi_default, NULL},
  };
  napi_define_properties(env, exports, sizeof props / sizeof props[0], props);
  napi_value v;
  napi_create_string_utf8(env, fuse_pkgversion(), NAPI_AUTO_LENGTH, &v);
  napi_set_named_property(env, exports, "libfuseVersion", v);
  return exports;
}

NAPI_MODULE(NODE_GYP_MODULE_NAME, init_module)
