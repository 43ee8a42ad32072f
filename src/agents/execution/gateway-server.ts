// Where bootstraps reach the dispatch gateway. Each execution gets an HTTP server on a unix socket in its own run
// directory, which the runtime bind-mounts into the sandbox (/orch/run/gateway.sock): a container with
// NetworkMode none still reaches it, and the socket only ever speaks for that one execution. The node's main HTTP
// server also serves POST /v1/dispatch-gateway on its internal address (loopback only) through the same registry.
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { rm } from 'node:fs/promises';
import type { Logger } from '../../logging/logger.ts';
import { GatewayChannel, GatewayProtocolError, parseInbound, type OutboundMessage } from './gateway-channel.ts';

export const GATEWAY_PATH = '/v1/dispatch-gateway';
const MAX_BODY = 16 * 1024 * 1024;

export class GatewayRegistry {
  private readonly channels = new Map<string, GatewayChannel>();

  open(executionId: string): GatewayChannel {
    this.channels.get(executionId)?.close();
    const ch = new GatewayChannel(executionId);
    this.channels.set(executionId, ch);
    return ch;
  }

  closeChannel(ch: GatewayChannel): void {
    ch.close();
    if (this.channels.get(ch.executionId) === ch) this.channels.delete(ch.executionId);
  }

  get(executionId: string): GatewayChannel | undefined {
    return this.channels.get(executionId);
  }

  /** One gateway request: 200 with the next message, 400 on a malformed one, 404 for an execution not running here. */
  async handle(body: unknown, only?: GatewayChannel): Promise<{ status: number; body: OutboundMessage | { error: string } }> {
    let msg;
    try {
      msg = parseInbound(body);
    } catch (err) {
      if (err instanceof GatewayProtocolError) return { status: 400, body: { error: err.message } };
      throw err;
    }
    const ch = only ?? this.channels.get(msg.execution_id);
    if (!ch || ch.executionId !== msg.execution_id) return { status: 404, body: { error: 'execution is not running on this node' } };
    return { status: 200, body: await ch.receive(msg) };
  }
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    let size = 0;
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size > MAX_BODY) {
        reject(new Error('body too large'));
        req.destroy();
        return;
      }
      chunks.push(c);
    });
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

export interface SocketGateway {
  path: string;
  close(): Promise<void>;
}

/** Serves one execution's channel on a unix socket at `socketPath`. */
export async function listenGatewaySocket(
  registry: GatewayRegistry,
  channel: GatewayChannel,
  socketPath: string,
  logger: Logger,
): Promise<SocketGateway> {
  await rm(socketPath, { force: true });
  const server: Server = createServer((req, res) => {
    const send = (status: number, body: unknown): void => {
      const text = JSON.stringify(body);
      res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
      res.end(text);
    };
    if (req.method !== 'POST' || req.url !== GATEWAY_PATH) return send(404, { error: 'not found' });
    readBody(req)
      .then(async (text) => {
        let body: unknown;
        try {
          body = JSON.parse(text);
        } catch {
          return send(400, { error: 'body is not JSON' });
        }
        const out = await registry.handle(body, channel);
        send(out.status, out.body);
      })
      .catch((err: unknown) => {
        logger.warn({ err }, 'gateway request failed');
        if (!res.headersSent) send(500, { error: 'internal error' });
      });
  });
  // Requests are held open while the model thinks; no server-side timeout may cut them.
  server.requestTimeout = 0;
  server.headersTimeout = 0;
  server.keepAliveTimeout = 0;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(socketPath, () => resolve());
  });
  return {
    path: socketPath,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }).then(() => rm(socketPath, { force: true })),
  };
}
