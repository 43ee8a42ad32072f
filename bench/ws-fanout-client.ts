// One process of WebSocket subscribers for the ws-fanout bench (a child of bench/ws-fanout.ts). Reads its job from
// the first IPC message: {url, token, streams: string[] (one subscription per socket)}; answers "ready" once every
// socket has its history, then records the delivery latency of each live event (now - payload.sent_at) until told
// to report.
import WebSocket from 'ws';

interface Job {
  url: string;
  token: string;
  streams: string[];
}

const lat: number[] = [];
let live = 0;
let errors = 0;
let closedEarly = 0;
const now = (): number => performance.timeOrigin + performance.now();

async function open(job: Job, stream: string): Promise<WebSocket> {
  const ws = new WebSocket(job.url, { headers: { authorization: `Bearer ${job.token}` }, perMessageDeflate: false });
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', reject);
  });
  const subscribed = new Promise<void>((resolve) => {
    ws.on('message', (data: Buffer) => {
      const text = data.toString();
      if (text.startsWith('{"subscribed"')) return resolve();
      const i = text.indexOf('"sent_at":');
      if (i < 0) return;
      lat.push(now() - Number.parseFloat(text.slice(i + 10)));
      live += 1;
    });
  });
  ws.on('error', () => void (errors += 1));
  ws.on('close', () => void (closedEarly += 1));
  ws.send(JSON.stringify({ subscribe: stream }));
  await subscribed;
  return ws;
}

process.on('message', (msg: { job?: Job; report?: boolean; reset?: boolean; close?: boolean }) => {
  if (msg.job) {
    const job = msg.job;
    void (async () => {
      const sockets: WebSocket[] = [];
      // A few hundred handshakes at a time, as a real crowd would arrive.
      for (let i = 0; i < job.streams.length; i += 200) {
        sockets.push(...(await Promise.all(job.streams.slice(i, i + 200).map((s) => open(job, s)))));
      }
      (globalThis as { sockets?: WebSocket[] }).sockets = sockets;
      process.send!({ ready: sockets.length });
    })().catch((err: unknown) => process.send!({ error: String(err) }));
  }
  if (msg.reset) {
    lat.length = 0;
    live = 0;
  }
  if (msg.report) process.send!({ latencies: lat, live, errors, closedEarly });
  if (msg.close) {
    for (const s of (globalThis as { sockets?: WebSocket[] }).sockets ?? []) s.terminate();
    setTimeout(() => process.exit(0), 100);
  }
});
