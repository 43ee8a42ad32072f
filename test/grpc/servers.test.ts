// startGrpcServer's lifecycle, and the cluster server's handler overrides and gate, over real sockets.
import test from 'ava';
import { credentials, logVerbosity, Metadata, Server, setLogVerbosity, status, type ServerUnaryCall, type sendUnaryData } from '@grpc/grpc-js';
import {
  NodeClusterServiceClient,
  NodeClusterServiceService,
  type AttestNodeRequest,
  type AttestNodeResponse,
} from '../../src/gen/orch/cluster/v1/cluster.js';
import { OrchRuntimeClient, OrchRuntimeService } from '../../src/gen/orch/runtime/v1/runtime.js';
import { createClusterServer } from '../../src/cluster/grpc/cluster-server.ts';
import { Errors, OrchError } from '../../src/errors/catalog.ts';
import { createRuntimeServer } from '../../src/gateway/grpc/runtime-server.ts';
import { startGrpcServer } from '../../src/gateway/grpc/start.ts';
import { silentLogger } from '../../src/logging/logger.ts';
import { call } from './helpers.ts';

const logger = silentLogger();

test('close() is idempotent and frees the port', async (t) => {
  const running = await startGrpcServer(createClusterServer({ logger }), '127.0.0.1', 0);
  const port = running.port;
  await Promise.all([running.close(), running.close()]);
  await running.close();
  // The same port can be bound again once closed.
  const again = await startGrpcServer(new Server(), '127.0.0.1', port);
  t.is(again.port, port);
  await again.close();
});

test('binding a port in use fails', async (t) => {
  const first = await startGrpcServer(new Server(), '127.0.0.1', 0);
  // grpc-js also logs the bind failure to stderr; it is the expected outcome here.
  setLogVerbosity(logVerbosity.NONE);
  try {
    await t.throwsAsync(startGrpcServer(new Server(), '127.0.0.1', first.port));
  } finally {
    setLogVerbosity(logVerbosity.ERROR);
    await first.close();
  }
});

test('close() cuts off a stream that does not end, after the shutdown timeout', async (t) => {
  let started!: () => void;
  const streaming = new Promise<void>((resolve) => (started = resolve));
  const running = await startGrpcServer(
    createRuntimeServer({
      auth: { enabled: false, authenticator: { authenticate: () => Promise.reject(new Error('unused')) } },
      logger,
      handlers: {
        // Never ends on its own.
        executeAgent: () => started(),
      },
    }),
    '127.0.0.1',
    0,
    { shutdownTimeoutMs: 200 },
  );
  const client = new OrchRuntimeClient(`127.0.0.1:${running.port}`, credentials.createInsecure());
  const outcome = call(client, OrchRuntimeService.executeAgent);
  await streaming;
  const t0 = Date.now();
  await running.close();
  t.true(Date.now() - t0 < 5000);
  const { code } = await outcome;
  t.not(code, status.OK);
  // Cut by the server, not ended by the client's own 30 s deadline: grpc-js's forceShutdown alone left the session
  // of a server without channelz open, and the call ended DEADLINE_EXCEEDED after 30 s (issue 15 found it).
  t.not(code, status.DEADLINE_EXCEEDED);
  t.true(Date.now() - t0 < 15_000, `the call ended ${Date.now() - t0} ms after close()`);
  client.close();
});

test('cluster server: an overriding handler answers, the gate runs first and may refuse', async (t) => {
  const running = await startGrpcServer(
    createClusterServer({
      logger,
      handlers: {
        attestNode: (call: ServerUnaryCall<AttestNodeRequest, AttestNodeResponse>, callback: sendUnaryData<AttestNodeResponse>) => {
          callback(null, { challenge_nonce: `nonce-for-${call.request.node_id}`, challenge_id: 'c1' });
        },
      },
      gate: async (call, path) => {
        if (path.endsWith('/AttestNode') || path.endsWith('/ChallengeNode')) return;
        if (call.metadata.get('authorization').length === 0) throw new OrchError(Errors.UNAUTHENTICATED, 'node token required');
      },
    }),
    '127.0.0.1',
    0,
  );
  const client = new NodeClusterServiceClient(`127.0.0.1:${running.port}`, credentials.createInsecure());
  try {
    const attest = await call(client, NodeClusterServiceService.attestNode, { node_id: 'w1', public_key_pem: '', role: 1 });
    t.is(attest.code, status.OK);
    t.deepEqual(attest.messages, [{ challenge_nonce: 'nonce-for-w1', challenge_id: 'c1' }]);

    const challenge = await call(client, NodeClusterServiceService.challengeNode);
    t.is(challenge.code, status.UNIMPLEMENTED);

    const refused = await call(client, NodeClusterServiceService.forwardExecution);
    t.is(refused.code, status.UNAUTHENTICATED);
    t.is(refused.details, 'node token required');

    const md = new Metadata();
    md.set('authorization', 'Bearer node-token');
    const passed = await call(client, NodeClusterServiceService.heartbeat, undefined, md);
    t.is(passed.code, status.UNIMPLEMENTED);
  } finally {
    client.close();
    await running.close();
  }
});
