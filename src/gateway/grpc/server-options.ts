// Options every orch gRPC server starts with. Channelz is off: it records call counters and a trace for every socket
// and call (about a fifth of grpc-js's own per-call cost; measured in bench/grpc-floor.ts, docs/BENCHMARKS.md) and
// orch serves no channelz service to read them.
//
// HTTP/2 flow-control windows: grpc-js serves with HTTP/2's default 64 KiB receive window per stream and per
// connection, so a 1 MiB request (an FSAL Write) waits for 16 WINDOW_UPDATE round trips; on a loaded machine that was
// most of a Write's time (docs/BENCHMARKS.md "FSAL and FUSE mounts", the profile). The server announces a larger
// window instead. grpc-js has a client option for it (`grpc-node.flow_control_window`, FLOW_CONTROL_WINDOW below) but
// no server option, so newGrpcServer sets the HTTP/2 server's settings and each session's connection window itself.
// Nagle's algorithm is already off on the accepted sockets (Node's HTTP/2 server sets TCP_NODELAY;
// test/grpc/server-windows.test.ts checks it): the session's socket is a proxy that refuses setNoDelay anyway.
import { constants as http2Constants, type Http2Server, type ServerHttp2Session } from 'node:http2';
import { Server, type ServerOptions } from '@grpc/grpc-js';

export const DEFAULT_SERVER_OPTIONS: ServerOptions = { 'grpc.enable_channelz': 0 };

/** Receive window (bytes) per stream and per connection, on orch's servers and its FSAL clients. */
export const FLOW_CONTROL_WINDOW = 16 * 1024 * 1024;

/** What newGrpcServer reaches inside grpc-js (1.14): the options its HTTP/2 servers are made with, and its hook. */
interface GrpcServerInternals {
  commonServerOptions?: { settings?: Record<string, unknown> };
  _setupHandlers?: (http2Server: Http2Server, ...rest: unknown[]) => void;
}

/** The open HTTP/2 sessions of each server newGrpcServer made (destroySessions). */
const openSessions = new WeakMap<Server, Set<ServerHttp2Session>>();

/**
 * Destroys every HTTP/2 session still open on a server newGrpcServer made: their calls end CANCELLED at the client.
 * For after grpc-js's forceShutdown, which destroys only the sessions it tracks for channelz; with channelz off
 * (DEFAULT_SERVER_OPTIONS) it tracks none, and a stream that never ended stayed open until the client's deadline.
 */
export function destroySessions(server: Server): void {
  for (const session of openSessions.get(server) ?? []) session.destroy(undefined, http2Constants.NGHTTP2_CANCEL);
}

/** Widens the windows of each session (above) and keeps the open sessions for destroySessions. */
function widenWindows(server: Server, window: number): void {
  const internals = server as unknown as GrpcServerInternals;
  const common = internals.commonServerOptions;
  const setup = internals._setupHandlers;
  // A grpc-js without these internals keeps its defaults (slower, still correct).
  if (!common || typeof setup !== 'function') return;
  common.settings = { ...common.settings, initialWindowSize: window };
  const sessions = new Set<ServerHttp2Session>();
  openSessions.set(server, sessions);
  internals._setupHandlers = function (this: Server, http2Server: Http2Server, ...rest: unknown[]) {
    http2Server.on('session', (session: ServerHttp2Session) => {
      sessions.add(session);
      session.once('close', () => sessions.delete(session));
      try {
        session.setLocalWindowSize(window);
      } catch {
        // A session already closing: nothing to widen.
      }
    });
    return setup.call(this, http2Server, ...rest);
  };
}

/** A grpc-js Server with orch's defaults; the caller's options win. */
export function newGrpcServer(options?: ServerOptions): Server {
  const server = new Server({ ...DEFAULT_SERVER_OPTIONS, ...options });
  widenWindows(server, FLOW_CONTROL_WINDOW);
  return server;
}
