// The dashboard's connection to /v1/ws: authenticates with the token as its first message, keeps the list streams and
// any entity streams subscribed, and on a lost connection reconnects with backoff, resuming each stream from the
// last sequence number it saw (list streams with their feed id; a `reset` snapshot replaces the list).

export type Msg = Record<string, unknown> & { stream?: string; seq?: number; feed?: string };
export type Status = 'connecting' | 'live' | 'reconnecting' | 'unauthorized';

type Listener = (m: Msg) => void;

interface Stream {
  listeners: Set<Listener>;
  lastSeq: number | undefined;
  feed: string | undefined;
  /** Entity streams (`execution:<id>`): the messages so far, replayed to a listener that joins late. */
  kept: Msg[] | undefined;
}

const KEEP = 1000;

export class Feed {
  private ws: WebSocket | undefined;
  private readonly streams = new Map<string, Stream>();
  private backoff = 500;
  private stopped = false;
  status: Status = 'connecting';

  constructor(
    private readonly token: string,
    private readonly onStatus: (s: Status) => void,
  ) {
    this.connect();
  }

  /** Adds a listener to a stream (subscribing it on first use); messages go to it in order. A listener joining an
   * entity stream already followed gets what was kept of it first. */
  subscribe(stream: string, onMessage: Listener): void {
    const existing = this.streams.get(stream);
    if (existing) {
      existing.listeners.add(onMessage);
      for (const m of existing.kept ?? []) onMessage(m);
      return;
    }
    this.streams.set(stream, { listeners: new Set([onMessage]), lastSeq: undefined, feed: undefined, kept: stream.includes(':') ? [] : undefined });
    if (this.status === 'live') this.sendSubscribe(stream);
  }

  /** Removes a listener (all of them when none is named); the last one gone unsubscribes the stream. */
  unsubscribe(stream: string, onMessage?: Listener): void {
    const s = this.streams.get(stream);
    if (!s) return;
    if (onMessage) s.listeners.delete(onMessage);
    else s.listeners.clear();
    if (s.listeners.size > 0) return;
    this.streams.delete(stream);
    if (this.status === 'live') this.ws?.send(JSON.stringify({ unsubscribe: stream }));
  }

  close(): void {
    this.stopped = true;
    this.ws?.close();
  }

  private setStatus(s: Status): void {
    this.status = s;
    this.onStatus(s);
  }

  private sendSubscribe(stream: string): void {
    const s = this.streams.get(stream)!;
    const msg: Record<string, unknown> = { subscribe: stream };
    if (s.lastSeq !== undefined) msg.last_seq = s.lastSeq;
    if (s.feed !== undefined) msg.feed = s.feed;
    this.ws?.send(JSON.stringify(msg));
  }

  private connect(): void {
    const url = `${location.protocol === 'https:' ? 'wss' : 'ws'}://${location.host}/v1/ws`;
    const ws = new WebSocket(url);
    this.ws = ws;
    ws.onopen = () => ws.send(JSON.stringify({ token: this.token }));
    ws.onmessage = (ev) => {
      const m = JSON.parse(String(ev.data)) as Msg;
      if (m.authenticated) {
        this.backoff = 500;
        this.setStatus('live');
        for (const name of this.streams.keys()) this.sendSubscribe(name);
        return;
      }
      const name = m.stream;
      if (typeof name !== 'string') return;
      const s = this.streams.get(name);
      if (!s) return;
      if (typeof m.seq === 'number') {
        // Entity streams: each seq once; list streams: the resume point of this feed.
        if (!('snapshot' in m) && s.lastSeq !== undefined && m.seq <= s.lastSeq && (m.feed === undefined || m.feed === s.feed)) return;
        s.lastSeq = m.seq;
      }
      if (typeof m.feed === 'string') s.feed = m.feed;
      if (s.kept) {
        s.kept.push(m);
        // Trimmed in steps, not per message: a busy stream must not pay a shift of the whole array each time.
        if (s.kept.length > KEEP * 2) s.kept.splice(0, s.kept.length - KEEP);
      }
      for (const l of s.listeners) l(m);
    };
    ws.onclose = (ev) => {
      if (this.stopped) return;
      if (ev.code === 4401) {
        this.setStatus('unauthorized');
        return;
      }
      this.setStatus('reconnecting');
      setTimeout(() => this.connect(), this.backoff);
      this.backoff = Math.min(this.backoff * 2, 10_000);
    };
  }
}

/** The /v1 API with the page's token (and only it): the page can do what the token may, nothing more. */
export async function api<T>(token: string, method: string, url: string, body?: unknown): Promise<T> {
  const res = await fetch(url, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  const text = await res.text();
  let parsed: T & { error?: string };
  try {
    parsed = (text ? JSON.parse(text) : {}) as T & { error?: string };
  } catch {
    parsed = { error: text.slice(0, 200) } as T & { error?: string };
  }
  if (!res.ok) throw new ApiError(res.status, parsed as never);
  return parsed;
}

/** An API error with its status and body (a 422's list of manifest problems in `details`). */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly body: { error?: string; details?: unknown } & Record<string, unknown>,
  ) {
    super(body.error ?? `HTTP ${status}`);
  }
}
