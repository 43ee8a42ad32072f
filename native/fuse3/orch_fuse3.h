// orch's libfuse 3 binding (issue 21): a kernel FUSE mount whose operations are JavaScript callbacks, with what
// libfuse 2.9 (@cocalc/fuse-native) cannot give: 1 MiB kernel requests (max_write, max_pages), a per-open keep_cache
// decided by JavaScript (so a file the mount just wrote is read back from the page cache, and one changed elsewhere is
// dropped at its next open), the kernel's writeback cache when asked for, and fuse_invalidate_path. Also statfs
// (answered by JavaScript: the volume's quota) and read-only mounts (`ro`).
//
// libfuse 3's high-level (path-based) API: src/fuse/operations.ts keeps its path-based callbacks unchanged.
// Threads: fuse_loop_mt runs in native threads; each request is handed to the JavaScript thread through one
// napi_threadsafe_function and the native thread waits (a semaphore) until JavaScript calls the reply function it was
// given. A reply function answers once: a second call is ignored, a call after the request was answered by an
// exception is ignored, and a JavaScript exception thrown by a handler answers EIO (and is reported to onError), so
// no handler can crash the process or leave the kernel waiting. Read and write data are not copied: JavaScript gets
// a Buffer over libfuse's own buffer, detached (length 0) once the request is answered, so a Buffer kept past its
// answer can never touch freed memory.
//
// This header is what the three parts share: bridge.c is the JavaScript side of a request (the threadsafe function's
// callback and the reply function), ops.c the libfuse side (each operation hands its request over and waits),
// addon.c the mount's lifetime (the loop thread, mount, unmount, invalidation) and the module.
#ifndef ORCH_FUSE3_H
#define ORCH_FUSE3_H

#define FUSE_USE_VERSION 312
#include <fuse.h>
#include <node_api.h>

#include <pthread.h>
#include <semaphore.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/statvfs.h>

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
  OP_STATFS,
  OP_COUNT,
  /** Not a kernel operation: the loop ended (the mount is gone); tells JavaScript. */
  OP_EXIT = 100,
  /** Not a kernel operation: an invalidation (invalidatePath) is done; calls its JavaScript callback. */
  OP_INVAL_DONE,
};

/** The JavaScript handler names, by operation. */
extern const char *OP_NAMES[OP_COUNT];

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
  /** OP_STATFS: the answer. */
  struct statvfs *sv;
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

/** Lets go of one owner's share of `m`; the last frees it. Any thread. */
void mount_unref(mount_t *m);
/** The threadsafe function's callback: runs a request's JavaScript handler (JavaScript thread). */
void call_js(napi_env env, napi_value js_cb, void *context, void *data);
/** A number (or a Date, as milliseconds) property of a JavaScript object, or `dflt`. */
double num_prop(napi_env env, napi_value obj, const char *name, double dflt);
napi_value mk_num(napi_env env, double d);
napi_value mk_str(napi_env env, const char *s);
/** Sets m->ops to the libfuse operations JavaScript implements (ops.c). */
void fill_operations(mount_t *m);

#endif
