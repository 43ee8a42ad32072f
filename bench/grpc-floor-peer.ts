// A process of the grpc-floor bench (bench/grpc-floor.ts): `server <kind>` answers unary calls and sends its port
// over IPC; `client` opens `count` connections to the port (one channel each, as separate machines would) and makes
// one call per connection per second, each with a heartbeat-sized request (about 1.1 kB) and bearer token (about
// 900 characters) until killed.
import * as grpc from '@grpc/grpc-js';
import http2 from 'node:http2';
import { randomBytes } from 'node:crypto';

const identity = (b: Buffer): Buffer => b;
const DEFINITION = {
  call: { path: '/bench.Floor/Call', requestStream: false, responseStream: false, requestSerialize: identity, requestDeserialize: identity, responseSerialize: identity, responseDeserialize: identity },
};

function serveGrpc(channelz: boolean): void {
  const server = new grpc.Server({ 'grpc.enable_channelz': channelz ? 1 : 0 });
  server.addService(DEFINITION as unknown as grpc.ServiceDefinition, {
    call: (call: grpc.ServerUnaryCall<Buffer, Buffer>, callback: grpc.sendUnaryData<Buffer>) => {
      void call.metadata.get('authorization');
      callback(null, Buffer.alloc(2));
    },
  });
  server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, port) => process.send!(err ? { error: err.message } : { port }));
}

/** gRPC's unary exchange on bare node:http2 (no grpc-js): what HTTP/2 itself costs per call. */
function serveHttp2(): void {
  const server = http2.createServer();
  server.on('stream', (stream, headers) => {
    void headers.authorization;
    const chunks: Buffer[] = [];
    stream.on('data', (c: Buffer) => chunks.push(c));
    stream.on('end', () => {
      void Buffer.concat(chunks);
      stream.respond({ ':status': 200, 'content-type': 'application/grpc' }, { waitForTrailers: true });
      stream.on('wantTrailers', () => stream.sendTrailers({ 'grpc-status': '0' }));
      const frame = Buffer.alloc(7);
      frame.writeUInt32BE(2, 1);
      stream.end(frame);
    });
  });
  server.listen(0, '127.0.0.1', () => process.send!({ port: (server.address() as { port: number }).port }));
}

function load(port: number, count: number): void {
  const Client = grpc.makeGenericClientConstructor(DEFINITION as unknown as grpc.ServiceDefinition, 'Floor');
  const token = `Bearer ${randomBytes(680).toString('base64url')}`;
  const body = randomBytes(1100);
  for (let i = 0; i < count; i++) {
    const client = new Client(`127.0.0.1:${port}`, grpc.credentials.createInsecure(), { 'grpc.use_local_subchannel_pool': 1 }) as unknown as {
      call: (req: Buffer, md: grpc.Metadata, cb: () => void) => void;
    };
    const md = new grpc.Metadata();
    md.set('authorization', token);
    setTimeout(() => setInterval(() => client.call(body, md, () => undefined), 1000), Math.random() * 1000);
  }
  process.send!({ started: true });
}

const [role, kind] = process.argv.slice(2);
if (role === 'server') {
  if (kind === 'http2') serveHttp2();
  else serveGrpc(kind === 'grpc-channelz');
} else {
  process.once('message', (m: { port: number; count: number }) => load(m.port, m.count));
}
