// The dashboard's connection to /v1/ws: authenticates with the token as its first message, keeps the list streams and
// any entity streams subscribed, and on a lost connection reconnects with backoff, resuming each stream from the
// last sequence number it saw (list streams with their feed id; a `reset` snapshot replaces the list).

export type Msg = Record<string, unknown> & { stream?: string; seq?: number; feed?: string };
export type Status = 'connecting' | 'live' | 'reconnecting' | 'unauthorized';

interface Stream {
  onMessage: (m: Msg) => void;
  lastSeq: number | undefined;
  feed: string | undefined;
}

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

  /** Subscribes (or keeps) a stream; messages of it go to `onMessage`, in order. */
  subscribe(stream: string, onMessage: (m: Msg) => void): void {
    const existing = this.streams.get(stream);
    if (existing) {
      existing.onMessage = onMessage;
      return;
    }
    this.streams.set(stream, { onMessage, lastSeq: undefined, feed: undefined });
    if (this.status === 'live') this.sendSubscribe(stream);
  }

  unsubscribe(stream: string): void {
    if (!this.streams.delete(stream)) return;
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
      s.onMessage(m);
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

export async function api<T>(token: string, method: string, url: string, body?: unknown): Promise<T> {
  const res = await fetch(url, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  const text = await res.text();
  const parsed = (text ? JSON.parse(text) : {}) as T & { error?: string };
  if (!res.ok) throw new Error(parsed.error ?? `${res.status}`);
  return parsed;
}
