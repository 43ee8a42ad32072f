// A parked run whose actor gives up (a crash loop when it is spawned again: the row is failed with the reason) must
// not stay `parked`: a failed row left parked was read by every full check of the node's parked runs (and woken
// there, to no end) and moved by every adoption. Real PostgreSQL, the engine as a node wires it, parking at once.
import test from 'ava';
import { manifest, startEngine, type EngineHarness } from './engine-harness.ts';

const ASK = manifest(
  'ask',
  'ask',
  `    ask:
      kind: Human
      prompt: 'Go?'
      transitions: []
`,
);

async function parked(h: EngineHarness, id: string): Promise<void> {
  for (const deadline = Date.now() + 30_000; Date.now() < deadline; await new Promise((r) => setTimeout(r, 25))) {
    const r = await h.db.query<{ parked: boolean }>('SELECT parked FROM workflow_executions WHERE id = $1', [id]);
    if (r.rows[0]?.parked && !h.actors.isLive('workflow', id)) return;
  }
  throw new Error(`run ${id} did not park`);
}

test('a parked run failed by its actor giving up is no longer parked', async (t) => {
  const h = await startEngine(t, { parkAfterMs: 0 });
  await h.deploy(ASK);
  const id = await h.run('ask');
  await parked(h, id);
  const kind = h.cap.kinds.find((k) => k.name === 'workflow');
  await kind!.giveUp!(id, 'the actor crashed too often');
  const row = (await h.db.query<{ status: string; parked: boolean; error: string | null }>('SELECT status, parked, error FROM workflow_executions WHERE id = $1', [id])).rows[0]!;
  t.is(row.status, 'failed');
  t.is(row.error, 'the actor crashed too often');
  t.false(row.parked, 'a terminal row is not parked');
});
