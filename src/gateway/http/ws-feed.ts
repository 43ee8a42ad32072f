// GET /v1/ws: the live feed over WebSocket (CONTRACT.md, docs/LIVE-FEED.md).
//
// Authentication: the bearer token in the Authorization header of the upgrade request, or (browsers cannot set
// headers on a WebSocket) a first message `{"token": "<jwt>", "tenant_id"?: "..."}`, answered `{"authenticated": ...}`.
// Until then every other message, or silence for AUTH_TIMEOUT_MS, closes the socket with 4401.
//
// Subscriptions, several per socket: `{"subscribe": "<stream>", "last_seq"?: N, "feed"?: "<id>"}` and
// `{"unsubscribe": "<stream>"}`.
//   - `execution:<id>`, `workflow:<id>`: the entity's event stream, `{"stream", "seq", "<event type>": {...}}`, from
//     seq 1 (its whole history: the current state) or from last_seq+1 on resume, then live; seq is the entity's own
//     event number, the same on every node, so a resume is exact anywhere.
//   - `executions`, `workflows`, `approvals` (the caller's tenant), `nodes`: list streams (see feed/hub.ts): a
//     snapshot `{"stream", "feed", "seq", "snapshot": [rows]}` then `{"stream", "feed", "seq", "upsert": row}` /
//     `{"remove": id}`; resuming with {feed, last_seq} is exact on the node that numbered them, else a snapshot
//     with `"reset": true` replaces the list.
//
// Token expiry: a socket lives no longer than its token. At the token's `exp` its subscriptions end and it is closed
// with 4001 "token expired", unless the client sent a fresh token on the socket first: `{"token": "<jwt>"}` after
// authentication, answered `{"reauthenticated": {"expires_at": "<ISO time>"}}`; the fresh token must name the same
// subject and tenant (a socket does not change identity), else the socket is closed with 4401.
//
// Back-pressure: after every send the socket's bufferedAmount (our queue plus the kernel's refusal to take more) is
// checked; over `maxBufferedBytes` the client is too slow: it is unsubscribed from everything, sent close code 4008
// and cut off shortly after, so a client that stops reading costs a bounded amount of memory.
import websocket from '@fastify/websocket';
import type { FastifyInstance } from 'fastify';
import type { WebSocket } from 'ws';
import type { Authenticator, Principal } from '../../auth/principal.ts';
import type { BusEvent, Subscription } from '../../bus/bus.ts';
import { isOrchError } from '../../errors/catalog.ts';
import { toJsonEvent } from '../../agents/execution/events.ts';
import type { ExecutionService } from '../../agents/execution/service.ts';
import { LIST_STREAMS, type FeedHub, type ListStream } from '../feed/hub.ts';

/** Workflow runs' event streams (`workflow:<id>`), when the node runs workflows. */
export interface WorkflowFeed {
  follow(tenant: string, id: string, onEvent: (e: BusEvent) => void, fromSeq?: number): Promise<Subscription>;
}

export interface WsFeedOptions {
  executions?: ExecutionService | undefined;
  workflows?: WorkflowFeed | undefined;
  /** The list streams; absent, they answer an error. */
  hub?: FeedHub | undefined;
  /** Authenticates a token sent as the first message. */
  authenticator: Authenticator;
  /** A socket whose unsent bytes exceed this is dropped with 4008. Default 4 MiB. */
  maxBufferedBytes?: number;
}

export const CLOSE_SLOW_CONSUMER = 4008;
export const CLOSE_UNAUTHENTICATED = 4401;
export const CLOSE_TOKEN_EXPIRED = 4001;
/** setTimeout's largest delay; a token valid for longer is re-checked when it fires. */
const MAX_TIMER_MS = 2 ** 31 - 1;
const AUTH_TIMEOUT_MS = 10_000;
const MAX_SUBSCRIPTIONS = 256;

let sockets = 0;
let slowDropped = 0;
/** Open feed sockets on this process (for metrics and tests). */
export function openFeedSockets(): number {
  return sockets;
}
/** Sockets dropped as too slow since this process started. */
export function droppedFeedSockets(): number {
  return slowDropped;
}

/**
 * The message of an entity-stream event, made once per event object: a bus that hands one object to all its
 * subscribers on a stream (Redis) then pays for the JSON once per node, not once per socket.
 */
const texts = new WeakMap<BusEvent, Buffer>();
function encoded(e: BusEvent): Buffer {
  let text = texts.get(e);
  if (text === undefined) {
    text = Buffer.from(JSON.stringify({ stream: e.stream, seq: e.seq, ...toJsonEvent(e) }));
    texts.set(e, text);
  }
  return text;
}

export async function registerWsFeed(app: FastifyInstance, o: WsFeedOptions): Promise<void> {
  const maxBuffered = o.maxBufferedBytes ?? 4 * 1024 * 1024;
  await app.register(websocket, { options: { maxPayload: 64 * 1024 } });
  // @fastify/websocket hides its routes from the OpenAPI document; the feed is part of the API (openapi.ts), so
  // it is shown again, described as the upgrade it is.
  app.addHook('onRoute', (route) => {
    if (route.url !== '/v1/ws' || !route.schema) return;
    Object.assign(route.schema, {
      hide: false,
      summary: 'Live feed (WebSocket upgrade)',
      description: 'Upgrade to a WebSocket; send {"subscribe": "executions" | "workflows" | "nodes" | "approvals" | "execution:<id>" | "workflow:<id>"} and receive one JSON event per message (CONTRACT.md). A browser may send the bearer token as its first message.',
    });
  });
  app.get('/v1/ws', { websocket: true }, (socket: WebSocket, request) => {
    sockets += 1;
    let principal: Principal | undefined = request.principal;
    const subs = new Map<string, { close: () => void }>();
    let dropped = false;
    let closed = false;

    const closeAll = (): void => {
      for (const s of subs.values()) s.close();
      subs.clear();
    };
    const sendText = (text: string | Buffer): void => {
      if (dropped || socket.readyState !== socket.OPEN) return;
      socket.send(text, { binary: false });
      if (socket.bufferedAmount > maxBuffered) {
        dropped = true;
        slowDropped += 1;
        closeAll();
        request.log.warn({ buffered: socket.bufferedAmount }, 'live feed client too slow; dropping it');
        socket.close(CLOSE_SLOW_CONSUMER, 'slow consumer');
        // A client that does not read will not read the close frame either.
        setTimeout(() => socket.terminate(), 3000).unref();
      }
    };
    const send = (msg: unknown): void => sendText(JSON.stringify(msg));

    // Ends the socket at the token's expiry; re-armed by a fresh token.
    let expiryTimer: NodeJS.Timeout | undefined;
    const expired = (): boolean => principal?.expiresAt !== undefined && principal.expiresAt <= Date.now();
    const endExpired = (): void => {
      closeAll();
      socket.close(CLOSE_TOKEN_EXPIRED, 'token expired');
    };
    const armExpiry = (): void => {
      if (expiryTimer) clearTimeout(expiryTimer);
      expiryTimer = undefined;
      const at = principal?.expiresAt;
      if (at === undefined) return;
      expiryTimer = setTimeout(() => (expired() ? endExpired() : armExpiry()), Math.min(MAX_TIMER_MS, Math.max(0, at - Date.now())));
      expiryTimer.unref();
    };
    armExpiry();

    const authTimer = principal
      ? undefined
      : setTimeout(() => {
          if (!principal) socket.close(CLOSE_UNAUTHENTICATED, 'authentication timed out');
        }, AUTH_TIMEOUT_MS);
    authTimer?.unref();

    const subscribe = (target: string, lastSeq: number | undefined, feed: string | undefined): void => {
      const p = principal!;
      if (subs.has(target)) return;
      if (subs.size >= MAX_SUBSCRIPTIONS) return send({ error: `at most ${MAX_SUBSCRIPTIONS} subscriptions per socket`, subscribe: target });
      const fail = (err: unknown): void => send({ error: isOrchError(err) ? err.message : 'subscription failed', subscribe: target });
      // Held while the subscription is being set up, so an unsubscribe or close meanwhile ends it.
      let cancelled = false;
      const holder = { close: () => void (cancelled = true) };
      subs.set(target, holder);

      if ((LIST_STREAMS as readonly string[]).includes(target)) {
        if (!o.hub) return void (subs.delete(target), send({ error: `subscription ${target} is not available on this node`, subscribe: target }));
        const resume = feed !== undefined && lastSeq !== undefined ? { feed, seq: lastSeq } : undefined;
        o.hub
          .subscribe(p.tenantId, target as ListStream, sendText, resume)
          .then((s) => {
            if (cancelled || closed || dropped) return s.close();
            subs.set(target, s);
          })
          .catch((err: unknown) => {
            subs.delete(target);
            fail(err);
          });
        return;
      }
      const m = o.executions ? /^execution:(.+)$/.exec(target) : null;
      const w = o.workflows ? /^workflow:(.+)$/.exec(target) : null;
      if (!m && !w) {
        subs.delete(target);
        return send({ error: `unknown subscription ${target}`, subscribe: target });
      }
      const fromSeq = lastSeq === undefined ? 1 : lastSeq + 1;
      const onEvent = (e: BusEvent): void => {
        if (!cancelled) sendText(encoded(e));
      };
      (m ? o.executions!.follow(p.tenantId, m[1]!, onEvent, fromSeq) : o.workflows!.follow(p.tenantId, w![1]!, onEvent, fromSeq))
        .then((sub) => {
          if (cancelled || closed || dropped) return void sub.close().catch(() => undefined);
          subs.set(target, { close: () => void sub.close().catch(() => undefined) });
          send({ subscribed: target });
        })
        .catch((err: unknown) => {
          subs.delete(target);
          fail(err);
        });
    };

    socket.on('message', (data: Buffer) => {
      if (dropped) return;
      let msg: { subscribe?: unknown; unsubscribe?: unknown; token?: unknown; tenant_id?: unknown; last_seq?: unknown; feed?: unknown };
      try {
        msg = JSON.parse(data.toString('utf8')) as typeof msg;
        if (msg === null || typeof msg !== 'object') throw new Error('not an object');
      } catch {
        send({ error: 'messages must be JSON objects' });
        return;
      }
      if (!principal) {
        if (typeof msg.token !== 'string') {
          socket.close(CLOSE_UNAUTHENTICATED, 'send {"token": "<bearer token>"} first');
          return;
        }
        const tenant = typeof msg.tenant_id === 'string' ? msg.tenant_id : undefined;
        socket.pause();
        o.authenticator
          .authenticate(msg.token, tenant)
          .then((pr) => {
            principal = pr;
            if (authTimer) clearTimeout(authTimer);
            armExpiry();
            send({ authenticated: { tenant_id: pr.tenantId, subject: pr.subject } });
          })
          .catch((err: unknown) => socket.close(CLOSE_UNAUTHENTICATED, (isOrchError(err) ? err.message : 'invalid token').slice(0, 120)))
          .finally(() => socket.resume());
        return;
      }
      if (expired()) return endExpired();
      if (typeof msg.token === 'string') {
        // A fresh token for the same identity extends the socket's life; anything else ends it.
        const current = principal;
        const tenant = typeof msg.tenant_id === 'string' ? msg.tenant_id : undefined;
        socket.pause();
        o.authenticator
          .authenticate(msg.token, tenant)
          .then((pr) => {
            if (pr.subject !== current.subject || pr.tenantId !== current.tenantId) {
              closeAll();
              socket.close(CLOSE_UNAUTHENTICATED, 'a fresh token must name the same subject and tenant');
              return;
            }
            principal = pr;
            armExpiry();
            send({ reauthenticated: { expires_at: pr.expiresAt === undefined ? null : new Date(pr.expiresAt).toISOString() } });
          })
          .catch((err: unknown) => {
            closeAll();
            socket.close(CLOSE_UNAUTHENTICATED, (isOrchError(err) ? err.message : 'invalid token').slice(0, 120));
          })
          .finally(() => socket.resume());
        return;
      }
      if (typeof msg.unsubscribe === 'string') {
        subs.get(msg.unsubscribe)?.close();
        subs.delete(msg.unsubscribe);
        send({ unsubscribed: msg.unsubscribe });
        return;
      }
      const target = msg.subscribe;
      if (typeof target !== 'string') {
        send({ error: 'expected {"subscribe": "<stream>"}' });
        return;
      }
      const lastSeq = msg.last_seq;
      if (lastSeq !== undefined && (typeof lastSeq !== 'number' || !Number.isInteger(lastSeq) || lastSeq < 0)) {
        send({ error: 'last_seq must be a non-negative integer', subscribe: target });
        return;
      }
      if (msg.feed !== undefined && typeof msg.feed !== 'string') {
        send({ error: 'feed must be a string', subscribe: target });
        return;
      }
      subscribe(target, lastSeq, msg.feed);
    });
    socket.on('close', () => {
      closed = true;
      sockets -= 1;
      if (authTimer) clearTimeout(authTimer);
      if (expiryTimer) clearTimeout(expiryTimer);
      closeAll();
    });
  });
}
