// The node's catalog against seed 001's table "Catalog: required parameters and skip_judge default": every tool the
// table names (81; the prose says 83 built-in) is registered on a full node (PostgreSQL, volumes, workflows, an LLM provider), with the
// seed's required parameters and skip_judge default, and no tool outside the seed is registered.
import test from 'ava';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { startTestNode } from '../support/in-process-node.ts';

/** The seed's table, copied from ../shared/seeds/001_*.txt (the seeds are not in this repository). */
const TABLE = path.join(import.meta.dirname, 'fixtures/seed-001-catalog.md');

interface SeedRow {
  required: string[];
  /** undefined where the seed says "not shown". */
  skipJudge: boolean | undefined;
}

/** The rows of the seed's catalog table: one entry per tool name (a row may name several tools). */
function seedCatalog(): Map<string, SeedRow> {
  const text = readFileSync(TABLE, 'utf8');
  const start = text.indexOf('### Catalog: required parameters and skip_judge default');
  const end = text.indexOf('\nNotes:', start);
  const out = new Map<string, SeedRow>();
  for (const line of text.slice(start, end).split('\n')) {
    const cells = line.split('|').map((c) => c.trim());
    if (cells.length < 4 || !cells[1]?.startsWith('`')) continue;
    const names = [...cells[1].matchAll(/`([^`]+)`/g)].map((m) => m[1]!);
    // "`path` (defaults to `/` when absent)" is a parameter with a default, not a required one.
    const cell = cells[2]!.replace(/`[^`]+`\s*\(defaults[^)]*\)/g, '');
    const required = cell.startsWith('none') ? [] : [...cell.replace(/\(.*?\)/g, '').matchAll(/`([^`]+)`/g)].map((m) => m[1]!);
    const sj = cells[3]!;
    const skipJudge = sj.startsWith('true') ? true : sj.startsWith('false') ? false : undefined;
    for (const n of names) out.set(n, { required, skipJudge });
  }
  return out;
}

test("a full node registers exactly the tools of seed 001's catalog table with their required parameters and skip_judge", async (t) => {
  const seed = seedCatalog();
  // The seed's prose counts 83 built-in tools; its table (the one place that names them) lists 81 distinct names.
  t.is(seed.size, 81, 'the rows of the seed table');

  // An LLM provider (never called) and Cortex, so that every tool family is registered.
  const { node } = await startTestNode(t, { name: 'sc', llmUrl: 'http://127.0.0.1:9/v1', extraYaml: '  cortex: {}\n' });
  const defs = new Map(node.tools.definitions().map((d) => [d.name, d]));

  t.deepEqual([...seed.keys()].filter((n) => !defs.has(n)).sort(), [], 'seed tools missing from the catalog');
  t.deepEqual([...defs.keys()].filter((n) => !seed.has(n)).sort(), [], 'catalog tools the seed does not list');
  const wrong: string[] = [];
  for (const [name, row] of seed) {
    const d = defs.get(name);
    if (!d) continue;
    const have = [...(d.required ?? [])].sort().join(',');
    if (have !== [...row.required].sort().join(',')) wrong.push(`${name} requires [${have}], the seed [${row.required.join(',')}]`);
    if (row.skipJudge !== undefined && node.tools.skipJudge(name) !== row.skipJudge) wrong.push(`${name} skip_judge ${node.tools.skipJudge(name)}, the seed ${row.skipJudge}`);
  }
  t.deepEqual(wrong, []);
});
