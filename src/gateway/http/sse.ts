// Server-Sent Events of one bus stream: an execution's events (execution-routes.ts) and a workflow run's
// (workflow-execution-routes.ts). One writer for both, so resuming, keep-alives and the end of a stream behave the
// same on either route; each route says only how to subscribe, how an event reads, and which event is the last.
import type { FastifyReply } from 'fastify';
import type { BusEvent } from '../../bus/bus.ts';

/** How often a comment line keeps idle proxies from closing a quiet stream. */
const KEEP_ALIVE_MS = 15_000;

export interface SseSource {
  /** What the opening comment line names (`execution events`). */
  what: string;
  /**
   * Subscribes from seq `from`, delivering history then live events in order. It validates (throwing the 400/404)
   * before it delivers anything, so a refused stream is still a plain JSON error: the 200 goes out only with the
   * first event or once the subscription is in place.
   */
  follow(from: number, deliver: (e: BusEvent) => void): Promise<{ close(): Promise<void> }>;
  /** The event's `data:` value (JSON-encoded here). */
  data(e: BusEvent): unknown;
  /** The stream ends after this event (a terminal event, or the last one the caller asked for). */
  isLast(e: BusEvent): boolean;
}

/** The first seq to send: the one after an SSE client's `Last-Event-ID` (decimal digits), else 1. */
export function resumeFrom(lastEventId: string | string[] | undefined): number {
  const last = Array.isArray(lastEventId) ? lastEventId[0] : lastEventId;
  return last && /^\d+$/.test(last) ? Number(last) + 1 : 1;
}

/**
 * Streams `source` from seq `from` as `id:`/`event:`/`data:` frames until its last event or until the client
 * leaves. `empty`: there is nothing to send (the caller knows the stream ends before `from`): the stream opens
 * and ends at once, without subscribing.
 */
export async function streamSse(reply: FastifyReply, source: SseSource, from: number, empty = false): Promise<void> {
  const raw = reply.raw;
  let ended = empty;
  let finish: () => void = () => undefined;
  const done = new Promise<void>((resolve) => (finish = resolve));
  let head = false;
  const writeHead = (): void => {
    if (head) return;
    head = true;
    reply.hijack();
    raw.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive', 'x-accel-buffering': 'no' });
    raw.write(`: stream of ${source.what}\n\n`);
  };
  if (empty) {
    writeHead();
    raw.end();
    return;
  }
  const deliver = (e: BusEvent): void => {
    if (ended) return;
    writeHead();
    raw.write(`id: ${e.seq}\nevent: ${e.type}\ndata: ${JSON.stringify(source.data(e))}\n\n`);
    if (source.isLast(e)) {
      ended = true;
      finish();
    }
  };
  const sub = await source.follow(from, deliver);
  writeHead();
  const keepAlive = setInterval(() => raw.write(': keep-alive\n\n'), KEEP_ALIVE_MS);
  raw.on('close', () => finish());
  await done;
  clearInterval(keepAlive);
  await sub.close();
  raw.end();
}
