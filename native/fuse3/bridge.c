// orch's libfuse 3 binding: the JavaScript side of a request (orch_fuse3.h). A request reaches the JavaScript thread
// through the mount's threadsafe function; call_js runs its handler with a reply function, which answers the request
// once and wakes the libfuse thread waiting for it.
#include "orch_fuse3.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

const char *OP_NAMES[OP_COUNT] = {
    "getattr", "readdir", "open",    "create", "read",  "write", "truncate", "ftruncate", "flush",
    "fsync",   "release", "unlink",  "rename", "mkdir", "rmdir", "chmod",    "chown",     "utimens",
    "statfs",
};

void mount_unref(mount_t *m) {
  if (__atomic_sub_fetch(&m->refs, 1, __ATOMIC_SEQ_CST) > 0) return;
  pthread_mutex_destroy(&m->lock);
  free(m->mnt);
  free(m);
}

double num_prop(napi_env env, napi_value obj, const char *name, double dflt) {
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
    case OP_STATFS: {
      // Sizes in fragments of `frsize` bytes (df multiplies blocks by it); what is not given stays 0.
      napi_valuetype ty = napi_undefined;
      if (res != 0) break;
      if (argc < 2 || napi_typeof(env, argv[1], &ty) != napi_ok || ty != napi_object) {
        res = -EIO;
        break;
      }
      struct statvfs *sv = r->sv;
      sv->f_bsize = (unsigned long)num_prop(env, argv[1], "bsize", 4096);
      sv->f_frsize = (unsigned long)num_prop(env, argv[1], "frsize", (double)sv->f_bsize);
      sv->f_blocks = (fsblkcnt_t)num_prop(env, argv[1], "blocks", 0);
      sv->f_bfree = (fsblkcnt_t)num_prop(env, argv[1], "bfree", 0);
      sv->f_bavail = (fsblkcnt_t)num_prop(env, argv[1], "bavail", 0);
      sv->f_files = (fsfilcnt_t)num_prop(env, argv[1], "files", 0);
      sv->f_ffree = (fsfilcnt_t)num_prop(env, argv[1], "ffree", 0);
      sv->f_favail = (fsfilcnt_t)num_prop(env, argv[1], "favail", (double)sv->f_ffree);
      sv->f_namemax = (unsigned long)num_prop(env, argv[1], "namemax", 255);
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

napi_value mk_num(napi_env env, double d) {
  napi_value v;
  napi_create_double(env, d, &v);
  return v;
}

napi_value mk_str(napi_env env, const char *s) {
  napi_value v;
  napi_create_string_utf8(env, s, NAPI_AUTO_LENGTH, &v);
  return v;
}

void call_js(napi_env env, napi_value js_cb, void *context, void *data) {
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
    case OP_STATFS:
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
