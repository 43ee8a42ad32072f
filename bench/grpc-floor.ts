// What one unary call costs a Node server before orch does anything (issue 7's heartbeat CPU target): a server
// process answers N connections that each make one call per second (bench/grpc-floor-peer.ts, 2 load processes),
// with a heartbeat-sized request and token, and its CPU (utime + stime, /proc) per call is measured over the
// window: on bare node:http2 (gRPC's framing by hand), on grpc-js with channelz on (its default) and off (orch's
// servers). Plus Ed25519 verification of a heartbeat-sized payload, in process, by OpenSSL and by libsodium. Together: the floor under the
// controller's CPU per heartbeat (bench/cluster-heartbeats.ts).
// Run: `npm run bench -- grpc-floor [--workers 1000] [--seconds 20] [--runs 3]`.
import { fork, type ChildProcess } from 'node:child_process';
import { generateKeyPairSync, sign, verify } from 'node:crypto';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { verifyEd25519 } from '../src/util/ed25519.ts';
import { cpuSeconds } from './proc-cpu.ts';

const PEER = path.join(path.dirname(fileURLToPath(import.meta.url)), 'grpc-floor-peer.ts');
export type FloorServer = 'http2' | 'grpc-channelz' | 'grpc';

function message<T>(child: ChildProcess): Promise<T> {
  return new Promise((resolve, reject) => {
    child.once('message', (m: T & { error?: string }) => (m.error ? reject(new Error(m.error)) : resolve(m)));
    child.once('exit', (code) => reject(new Error(`bench peer exited (${code})`)));
  });
}

/** Server CPU per call, µs, and the server's CPU as % of one core, at `connections` calls/s. */
export async function benchServerFloor(kind: FloorServer, connections: number, seconds: number): Promise<{ usPerCall: number; cpuPercent: number; loadAverage: number }> {
  const spawn = (args: string[]): ChildProcess => fork(PEER, args, { execArgv: ['--import', 'tsx'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const server = spawn(['server', kind]);
  const children = [server];
  try {
    const { port } = await message<{ port: number }>(server);
    for (let i = 0; i < 2; i++) {
      const client = spawn(['client']);
      children.push(client);
      const started = message(client);
      client.send({ port, count: Math.ceil(connections / 2) });
      await started;
    }
    // Connections open and the phases spread over the second before the window.
    await new Promise((r) => setTimeout(r, 5000));
    const c0 = await cpuSeconds(server.pid!);
    const t0 = Date.now();
    await new Promise((r) => setTimeout(r, seconds * 1000));
    const cpu = (await cpuSeconds(server.pid!)) - c0;
    const elapsed = (Date.now() - t0) / 1000;
    const calls = Math.ceil(connections / 2) * 2 * elapsed;
    return { usPerCall: (cpu / calls) * 1e6, cpuPercent: (cpu / elapsed) * 100, loadAverage: os.loadavg()[0]! };
  } finally {
    for (const c of children) c.kill('SIGKILL');
  }
}

/** Ed25519 verification of a heartbeat-sized envelope payload, µs per verify: node:crypto (OpenSSL) or libsodium (orch's). */
export function benchEd25519Verify(impl: 'openssl' | 'libsodium', n = 5000): number {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  const raw = Buffer.from(String(publicKey.export({ format: 'jwk' }).x), 'base64url');
  const payload = Buffer.alloc(1100, 7);
  const signature = sign(null, payload, privateKey);
  const once = impl === 'openssl' ? () => verify(null, payload, publicKey, signature) : () => verifyEd25519(raw, payload, signature);
  for (let i = 0; i < 200; i++) once();
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < n; i++) if (!once()) throw new Error('signature did not verify');
  return Number(process.hrtime.bigint() - t0) / 1000 / n;
}
