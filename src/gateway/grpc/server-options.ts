// Options every orch gRPC server starts with. Channelz is off: it records call counters and a trace for every socket
// and call (about a fifth of grpc-js's own per-call cost; measured in bench/grpc-floor.ts, docs/BENCHMARKS.md) and
// orch serves no channelz service to read them.
import { Server, type ServerOptions } from '@grpc/grpc-js';

export const DEFAULT_SERVER_OPTIONS: ServerOptions = { 'grpc.enable_channelz': 0 };

/** A grpc-js Server with orch's defaults; the caller's options win. */
export function newGrpcServer(options?: ServerOptions): Server {
  return new Server({ ...DEFAULT_SERVER_OPTIONS, ...options });
}
