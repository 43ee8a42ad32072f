// orch.execution.file: reads an execution's workspace file, scoped by tenant (the execution service answers
// NOT_FOUND for another tenant's execution), and never outside the workspace (`../`, symlinks).
import test from 'ava';
import { randomUUID } from 'node:crypto';
import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { ExecutionService } from '../../src/agents/execution/service.ts';
import { volumeRoot } from '../../src/agents/execution/sandbox.ts';
import { Errors, OrchError } from '../../src/errors/catalog.ts';
import { silentLogger } from '../../src/logging/logger.ts';
import { createToolCatalog } from '../../src/tools/catalog.ts';
import { callContext, context, nodeConfig } from './helpers.ts';

test('orch.execution.file reads workspace files of the caller tenant only, never outside the workspace', async (t) => {
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'orch-exec-file-'));
  t.teardown(() => rm(dataDir, { recursive: true, force: true }));
  const id = randomUUID();
  const ws = path.join(volumeRoot(dataDir, id), 'workspace');
  await mkdir(path.join(ws, 'out'), { recursive: true });
  await writeFile(path.join(ws, 'out', 'result.txt'), 'forty-two');
  await writeFile(path.join(dataDir, 'secret.txt'), 'nope');
  await symlink(path.join(dataDir, 'secret.txt'), path.join(ws, 'link.txt'));
  // The execution service's tenant check, as ExecutionService.get behaves: another tenant gets NOT_FOUND.
  const executions = {
    get: async (tenant: string, execId: string) => {
      if (tenant !== 'acme' || execId !== id) throw new OrchError(Errors.NOT_FOUND, 'Execution not found');
      return { execution_id: id };
    },
  } as unknown as ExecutionService;
  const catalog = createToolCatalog({ config: nodeConfig({ dataDir }), logger: silentLogger(), executions: () => executions });
  const ctx = { ...callContext(context()), tenantId: 'acme' };
  t.like(await catalog.call(ctx, 'orch.execution.file', { execution_id: id, path: 'out/result.txt' }), { ok: true, result: { content: 'forty-two', path: '/workspace/out/result.txt' } });
  t.like(await catalog.call(ctx, 'orch.execution.file', { execution_id: id, path: '/workspace/out/result.txt' }), { ok: true, result: { content: 'forty-two' } });
  t.like(await catalog.call(ctx, 'orch.execution.file', { execution_id: id, path: '../../secret.txt' }), { ok: false, error: { error: 'PathOutsideBoundary' } });
  t.like(await catalog.call(ctx, 'orch.execution.file', { execution_id: id, path: 'link.txt' }), { ok: false, error: { error: 'PathOutsideBoundary' } });
  t.like(await catalog.call(ctx, 'orch.execution.file', { execution_id: id, path: 'missing.txt' }), { ok: false, error: { error: 'NOT_FOUND' } });
  t.like(await catalog.call({ ...ctx, tenantId: 'other' }, 'orch.execution.file', { execution_id: id, path: 'out/result.txt' }), { ok: false, error: { error: 'NOT_FOUND' } });
  t.like(await catalog.call(ctx, 'orch.execution.file', { execution_id: id }), { ok: false, error: { error: 'InvalidArguments' } });
});
