// A TCP relay in front of the real PostgreSQL that keeps what clients send it, so a test can count the statements a
// code path sent on the wire — BEGIN and COMMIT included, which a Db wrapper (query-recorder.ts) never sees because
// the adapter sends them itself.
import net from 'node:net';
import { relayTo } from './tcp-relay.ts';

export interface PgWire {
  /** The database URL through the relay. */
  url: string;
  /** How many times `word` (e.g. 'BEGIN') occurs in what clients sent since the last reset. */
  count(word: string): number;
  /** Bytes clients sent since the last reset. */
  bytes(): number;
  reset(): void;
  close(): Promise<void>;
}

export async function pgWire(url: string): Promise<PgWire> {
  const target = new URL(url);
  let sent: Buffer[] = [];
  const sockets = new Set<net.Socket>();
  const server = net.createServer(relayTo({ host: target.hostname, port: Number(target.port || 5432) }, sockets, (chunk) => sent.push(chunk)));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const relayed = new URL(url);
  relayed.hostname = '127.0.0.1';
  relayed.port = String((server.address() as net.AddressInfo).port);
  return {
    url: relayed.toString(),
    count: (word) => {
      const all = Buffer.concat(sent);
      let n = 0;
      for (let at = all.indexOf(word); at >= 0; at = all.indexOf(word, at + word.length)) n++;
      return n;
    },
    bytes: () => sent.reduce((n, c) => n + c.length, 0),
    reset: () => {
      sent = [];
    },
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
