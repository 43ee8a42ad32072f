// Binds a grpc.Server to a host and port and gives back the real port (port 0 picks a free one) and an
// idempotent close that lets in-flight calls finish for a while, then cuts them off.
import { ServerCredentials, type Server } from '@grpc/grpc-js';
import { destroySessions } from './server-options.ts';

export interface RunningGrpcServer {
  /** The bound port; the kernel's choice when 0 was asked for. */
  port: number;
  /** Graceful shutdown (tryShutdown), forced after the shutdown timeout. Safe to call more than once. */
  close(): Promise<void>;
}

export interface StartGrpcOptions {
  /** Insecure by default: TLS is terminated in front of the node or added here later. */
  credentials?: ServerCredentials;
  /** How long close() waits for in-flight calls before forceShutdown. Default 5000 ms. */
  shutdownTimeoutMs?: number;
}

/** `host:port`, with IPv6 literals bracketed as gRPC addresses need. */
function address(host: string, port: number): string {
  const h = host.includes(':') && !host.startsWith('[') ? `[${host}]` : host;
  return `${h}:${port}`;
}

export function startGrpcServer(server: Server, host: string, port: number, options: StartGrpcOptions = {}): Promise<RunningGrpcServer> {
  const credentials = options.credentials ?? ServerCredentials.createInsecure();
  const shutdownTimeoutMs = options.shutdownTimeoutMs ?? 5000;
  return new Promise((resolve, reject) => {
    // grpc-js (>= 1.10) starts serving as soon as bindAsync succeeds; start() is deprecated.
    server.bindAsync(address(host, port), credentials, (err, boundPort) => {
      if (err) {
        reject(err);
        return;
      }
      let closing: Promise<void> | undefined;
      const close = (): Promise<void> => {
        closing ??= new Promise<void>((done) => {
          const timer = setTimeout(() => {
            server.forceShutdown();
            // forceShutdown leaves the sessions of a server without channelz open (server-options.ts).
            destroySessions(server);
            done();
          }, shutdownTimeoutMs);
          timer.unref();
          server.tryShutdown(() => {
            clearTimeout(timer);
            done();
          });
        });
        return closing;
      };
      resolve({ port: boundPort, close });
    });
  });
}
