// GET /v1/ws: the live feed over WebSocket (CONTRACT.md). The client sends `{"subscribe": "execution:<id>"}`
// (several subscriptions per socket are fine); the server answers `{"subscribed": ...}` and then one JSON message
// per event: `{"stream", "seq", "<variant>": {...}}`, history first, then live, each sequence number once. The
// list-level streams (executions, workflows, nodes, approvals) come with the dashboard (issue 9): they answer an
// error naming them as not available yet.
import websocket from '@fastify/websocket';
import type { FastifyInstance } from 'fastify';
import type { Subscription } from '../../bus/bus.ts';
import { isOrchError } from '../../errors/catalog.ts';
import { toJsonEvent } from '../../agents/execution/events.ts';
import type { ExecutionService } from '../../agents/execution/service.ts';
import { principalOf } from './auth-hook.ts';

export async function registerWsFeed(app: FastifyInstance, executions: ExecutionService): Promise<void> {
  await app.register(websocket, { options: { maxPayload: 64 * 1024 } });
  app.get('/v1/ws', { websocket: true }, (socket, request) => {
    const principal = principalOf(request);
    const subs = new Map<string, Subscription>();
    const send = (msg: unknown): void => {
      if (socket.readyState === socket.OPEN) socket.send(JSON.stringify(msg));
    };
    socket.on('message', (data: Buffer) => {
      let msg: { subscribe?: unknown; unsubscribe?: unknown };
      try {
        msg = JSON.parse(data.toString('utf8')) as typeof msg;
      } catch {
        send({ error: 'messages must be JSON' });
        return;
      }
      if (typeof msg.unsubscribe === 'string') {
        void subs.get(msg.unsubscribe)?.close();
        subs.delete(msg.unsubscribe);
        send({ unsubscribed: msg.unsubscribe });
        return;
      }
      const target = msg.subscribe;
      if (typeof target !== 'string') {
        send({ error: 'expected {"subscribe": "<stream>"}' });
        return;
      }
      if (subs.has(target)) return;
      const m = /^execution:(.+)$/.exec(target);
      if (!m) {
        send({ error: `subscription ${target} is not available yet`, subscribe: target });
        return;
      }
      const id = m[1]!;
      executions
        .follow(principal.tenantId, id, (e) => send({ stream: target, seq: e.seq, ...toJsonEvent(e) }))
        .then((sub) => {
          if (socket.readyState !== socket.OPEN) return void sub.close();
          subs.set(target, sub);
          send({ subscribed: target });
        })
        .catch((err: unknown) => send({ error: isOrchError(err) ? err.message : 'subscription failed', subscribe: target }));
    });
    socket.on('close', () => {
      for (const s of subs.values()) void s.close();
      subs.clear();
    });
  });
}
