// fastify's per-request logger (request.log, reply.log), made only when a request logs. fastify makes a pino child
// per request to bind its id, and a pino child serializes its bindings through the redaction of every log call
// (*.token, *.secret ...) when it is made: about 9 kB of garbage and a few microseconds per request, for a logger
// that at the default level `warn` almost never writes (issue 16: the node's CPU per request bounds the API race).
// Here the request gets a stand-in that inherits everything from the node's logger and makes the real child, with
// the same bindings, on the first line it writes at an enabled level (or on child()/bindings()); what it writes is
// what the eager child would have written.
import type { Bindings, ChildLoggerOptions } from 'pino';
import type { Logger } from '../../logging/logger.ts';

const LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'fatal'] as const;
const BINDINGS = Symbol('orch.lazyBindings');
const CHILD = Symbol('orch.lazyChild');

interface Lazy {
  [BINDINGS]: Bindings;
  [CHILD]?: Logger;
}

/** The shared prototype of a parent's stand-ins: the parent itself below, the deferring methods on top. */
const prototypes = new WeakMap<Logger, object>();

function prototypeOf(parent: Logger): object {
  let proto = prototypes.get(parent);
  if (proto) return proto;
  const real = (self: Lazy): Logger => (self[CHILD] ??= parent.child(self[BINDINGS]));
  proto = Object.create(parent) as object;
  const methods: Record<string, unknown> = {
    child(this: Lazy, bindings: Bindings, options?: ChildLoggerOptions) {
      return real(this).child(bindings, options);
    },
    bindings(this: Lazy) {
      return real(this).bindings();
    },
  };
  for (const level of LEVELS) {
    methods[level] = function (this: Lazy, ...args: unknown[]): void {
      // A level the node does not write: nothing to bind, no child (the parent's level is the request's: see below).
      if (!parent.isLevelEnabled(level)) return;
      (real(this)[level] as (...a: unknown[]) => void)(...args);
    };
  }
  Object.assign(proto, methods);
  prototypes.set(parent, proto);
  return proto;
}

/** fastify's childLoggerFactory: a stand-in for `parent.child(bindings)`, eager when options change the child. */
export function lazyRequestLogger(parent: Logger, bindings: Bindings, options: ChildLoggerOptions): Logger {
  // A route's own level or serializers make a different child: made as fastify would, at once.
  if (Object.keys(options).length > 0) return parent.child(bindings, options);
  const lazy = Object.create(prototypeOf(parent)) as Lazy;
  lazy[BINDINGS] = bindings;
  return lazy as unknown as Logger;
}
