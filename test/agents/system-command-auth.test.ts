// ExecuteSystemCommand is the operator's shell on the node's host (docs/SECURITY.md, "Why ExecuteSystemCommand
// stays on the host"): without an authenticated operator it runs nothing — also on a node whose gRPC
// authentication is turned off, where before any caller reaching the port got a root shell.
import test from 'ava';
import { credentials, Metadata, status, type ServiceError } from '@grpc/grpc-js';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { ExecutionService } from '../../src/agents/execution/service.ts';
import { OrchRuntimeClient } from '../../src/gen/orch/runtime/v1/runtime.js';
import { createRuntimeServer } from '../../src/gateway/grpc/runtime-server.ts';
import { executionHandlers } from '../../src/gateway/grpc/execution-handlers.ts';
import { startGrpcServer } from '../../src/gateway/grpc/start.ts';
import { silentLogger } from '../../src/logging/logger.ts';

test('with gRPC authentication off ExecuteSystemCommand answers PERMISSION_DENIED and runs nothing', async (t) => {
  const logger = silentLogger();
  const server = await startGrpcServer(
    createRuntimeServer({
      auth: { enabled: false, authenticator: { authenticate: () => Promise.reject(new Error('unused')) } },
      logger,
      handlers: executionHandlers(undefined as unknown as ExecutionService, logger),
    }),
    '127.0.0.1',
    0,
  );
  t.teardown(() => server.close());
  const client = new OrchRuntimeClient(`127.0.0.1:${server.port}`, credentials.createInsecure());
  t.teardown(() => client.close());
  const marker = path.join(os.tmpdir(), `orch-esc-${randomBytes(4).toString('hex')}`);
  t.teardown(() => rm(marker, { force: true }));
  const err = await new Promise<ServiceError | null>((resolve) =>
    client.executeSystemCommand({ command: `touch ${marker}; id -u`, env: {}, timeout_seconds: 10 }, new Metadata(), { deadline: Date.now() + 60_000 }, (e) => resolve(e)),
  );
  t.is(err?.code, status.PERMISSION_DENIED, String(err?.details));
  t.regex(String(err?.details), /authenticated operator/);
  t.false(existsSync(marker), 'the command ran on the host');
});
