// Client spans of the Redis connections (issue 19: ioredis was untraced). Made by hand around the client's
// sendCommand, the one call every command (pipelined or not) goes through, like instrumentation-ioredis does — that
// package patches ioredis only when registered before ioredis is first loaded, which static imports make fragile
// (the same reason as the pg spans of db.ts). A span is made only under an active span (a request, a workflow
// step), so the bus's background traffic does not start a trace of its own per command. The command name is
// recorded; its arguments never are (payloads, keys with tenant ids, secrets).
import { SpanKind, trace } from '@opentelemetry/api';
import { failSpan, tracer } from './tracing.ts';

/** What this file needs of an ioredis client (its Redis class). */
export interface TraceableRedis {
  sendCommand(command: { name: string; promise: Promise<unknown> }, ...rest: never[]): unknown;
  readonly options: { host?: string; port?: number };
}

// A command can pass through sendCommand more than once (queued while offline, then flushed): one span each.
const traced = new WeakSet<object>();

/**
 * Wraps `client.sendCommand` so that each command run under an active span gets a `redis.<COMMAND>` client span,
 * ended when Redis answers (failed when it errors). `name` says which of orch's connections it is (bus-publisher,
 * rate-limit, seal-replay). Returns the undo.
 */
export function traceRedisCommands(client: TraceableRedis, name: string): () => void {
  const original = client.sendCommand;
  const wrapped = function (this: TraceableRedis, command: { name: string; promise: Promise<unknown> }, ...rest: never[]): unknown {
    if (command && typeof command === 'object' && !traced.has(command) && trace.getActiveSpan()?.isRecording()) {
      traced.add(command);
      const op = String(command.name).toUpperCase();
      const span = tracer().startSpan(`redis.${op}`, {
        kind: SpanKind.CLIENT,
        attributes: {
          'db.system.name': 'redis',
          'db.operation.name': op,
          'orch.redis.client': name,
          ...(client.options.host ? { 'server.address': client.options.host } : {}),
          ...(client.options.port ? { 'server.port': client.options.port } : {}),
        },
      });
      // A handler of our own on the command's promise: the caller's rejection is still theirs to handle.
      command.promise.then(
        () => span.end(),
        (err: unknown) => {
          failSpan(span, err);
          span.end();
        },
      );
    }
    return original.call(this, command, ...rest);
  };
  client.sendCommand = wrapped;
  return () => {
    if (client.sendCommand === wrapped) client.sendCommand = original;
  };
}
