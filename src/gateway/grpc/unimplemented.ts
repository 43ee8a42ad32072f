// A complete implementation of a service in which every method answers UNIMPLEMENTED with a message naming it.
// Servers start from this and lay the handlers that exist over it, so a method nobody has built yet says so
// instead of faking success.
import type { ServiceDefinition, UntypedHandleCall, UntypedServiceImplementation, sendUnaryData } from '@grpc/grpc-js';
import type { EventEmitter } from 'node:events';
import { notImplemented, toGrpcError } from './errors.ts';

export function unimplementedService<T extends UntypedServiceImplementation>(definition: ServiceDefinition): T {
  const out: UntypedServiceImplementation = {};
  for (const [name, method] of Object.entries(definition)) {
    const error = () => toGrpcError(notImplemented(method.path));
    const handler = method.responseStream
      ? (call: EventEmitter) => {
          call.emit('error', error());
        }
      : (_call: unknown, callback: sendUnaryData<unknown>) => {
          callback(error());
        };
    out[name] = handler as UntypedHandleCall;
  }
  return out as T;
}

/** `base` with every handler of `overrides` that is actually defined laid over it. */
export function withOverrides<T extends UntypedServiceImplementation>(base: T, overrides: Partial<T> | undefined): T {
  const out: UntypedServiceImplementation = { ...base };
  for (const [name, handler] of Object.entries(overrides ?? {})) {
    if (handler !== undefined) out[name] = handler as UntypedHandleCall;
  }
  return out as T;
}
