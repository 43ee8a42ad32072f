// orch's libfuse 3 binding: the mount's lifetime and the module (orch_fuse3.h): mount (libfuse, the loop thread, the
// threadsafe function), unmount, what INIT negotiated, and invalidation on a thread of its own.
#include "orch_fuse3.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <unistd.h>

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

  fill_operations(m);

  char *fsname = str_prop(env, argv[1], "fsname");
  char *subtype = str_prop(env, argv[1], "subtype");
  char opts[700];
  int n = 0;
  opts[0] = '\0';
  if (bool_prop(env, argv[1], "allowOther")) n += snprintf(opts + n, sizeof opts - n, "%sallow_other", n ? "," : "");
  // A read-only mount (the FSAL's access mode): the kernel refuses every change with EROFS itself, at open(O_WRONLY)
  // and before any request reaches the daemon, as on any `ro` filesystem.
  if (bool_prop(env, argv[1], "readOnly")) n += snprintf(opts + n, sizeof opts - n, "%sro", n ? "," : "");
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
