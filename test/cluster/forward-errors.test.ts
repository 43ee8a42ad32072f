// A ForwardExecution the worker refuses ends with the refusal's status at once. The handler used to tear the stream
// down with destroy(err), which sent no status: the controller heard nothing until its deadline (the same defect
// as ExecuteAgent's, issue 14 #8; test/agents/execution-api.test.ts).
import test from 'ava';
import { status, type ServiceError } from '@grpc/grpc-js';
import { randomUUID } from 'node:crypto';
import { ActorRuntime } from '../../src/actors/runtime.ts';
import { MemoryBus } from '../../src/bus/memory.ts';
import { ClusterAuthority } from '../../src/cluster/authority.ts';
import { NodeClusterClient } from '../../src/cluster/client.ts';
import { createClusterServer } from '../../src/cluster/grpc/cluster-server.ts';
import { forwardExecutionHandler } from '../../src/cluster/grpc/routing-handlers.ts';
import { generateNodeKey } from '../../src/cluster/node-key.ts';
import { startGrpcServer } from '../../src/gateway/grpc/start.ts';
import { ForwardExecutionRequest } from '../../src/gen/orch/cluster/v1/cluster.js';
import { silentLogger } from '../../src/logging/logger.ts';
import { startController, testDb } from './harness.ts';

test('ForwardExecution of an unknown execution answers NOT_FOUND at once', async (t) => {
  const db = await testDb(t);
  const ctl = await startController(t, db);
  const logger = silentLogger();
  const actors = new ActorRuntime(logger, 'forward-errors');
  t.teardown(() => actors.shutdown());
  const server = await startGrpcServer(
    createClusterServer({
      logger,
      handlers: forwardExecutionHandler({ authority: new ClusterAuthority({ db, logger }), db, bus: new MemoryBus(logger), actors, nodeId: 'w-1', isDraining: () => false, logger }),
    }),
    '127.0.0.1',
    0,
  );
  t.teardown(() => server.close());
  const c = new NodeClusterClient(`127.0.0.1:${server.port}`, 60_000);
  t.teardown(() => c.close());
  const creds = await ctl.authority.selfCredentials('ctl-1', 'controller', generateNodeKey());
  const req = ForwardExecutionRequest.encode({ execution_id: randomUUID(), agent_id: randomUUID(), manifest_yaml: '{}', input: 'x', context_json: '' }).finish();
  const started = Date.now();
  const err = await new Promise<ServiceError | undefined>((resolve) => {
    const stream = c.stream('forwardExecution', req, creds, { deadline: Date.now() + 60_000 });
    stream.on('data', () => undefined);
    stream.on('error', (e: ServiceError) => resolve(e));
    stream.on('end', () => resolve(undefined));
  });
  t.is(err?.code, status.NOT_FOUND, err?.message);
  t.regex(err?.details ?? '', /not found/);
  t.true(Date.now() - started < 20_000, `${Date.now() - started} ms`);
});
