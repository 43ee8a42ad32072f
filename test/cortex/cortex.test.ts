// CortexService on real PostgreSQL with the local embedding: 1,000 stores of paraphrased errors collapse into one
// weighted pattern per error family; a held-out phrasing of each family finds it first (precision@1 over 25
// cases); min_success_score, error_type, limit, tenant isolation and bad input.
import test from 'ava';
import { CortexService } from '../../src/cortex/service.ts';
import { silentLogger } from '../../src/logging/logger.ts';
import type { Db } from '../../src/storage/db.ts';
import { openDb } from '../../src/storage/open.ts';
import { createTestDatabase, type TestDatabase } from '../support/pg.ts';
import { corpus, FAMILIES, queryCases } from './dataset.ts';

let tdb: TestDatabase;
let db: Db;
let cortex: CortexService;
/** pattern id → family key, learned from the stores. */
const familyOf = new Map<string, string>();

test.before(async () => {
  tdb = await createTestDatabase({ migrated: true });
  db = await openDb({ url: tdb.url, dataDir: '/tmp', poolSize: 10 }, silentLogger());
  cortex = new CortexService(db, {}, silentLogger());
});

test.after.always(async () => {
  await db?.close();
  await tdb?.drop();
});

test.serial('1,000 stores of paraphrased duplicates: one pattern per family, weighted by how often it was seen', async (t) => {
  const cases = corpus(1000);
  const perFamily = new Map<string, number>();
  let deduplicated = 0;
  for (const c of cases) {
    const r = await cortex.store('acme', { error_signature: c.error_signature, error_type: c.error_type, error_message: c.error_message, solution_approach: c.solution_approach, tags: [c.family] });
    const known = familyOf.get(r.pattern_id);
    if (known !== undefined) t.is(known, c.family, `a ${c.family} error was merged into ${known}`);
    familyOf.set(r.pattern_id, c.family);
    perFamily.set(c.family, (perFamily.get(c.family) ?? 0) + 1);
    if (r.deduplicated) deduplicated++;
    t.is(r.new_frequency, r.deduplicated ? r.new_frequency : 1);
  }
  const rows = await db.query<{ id: string; frequency: string; tags: string[] }>(`SELECT id, frequency::text AS frequency, tags FROM cortex_patterns WHERE tenant_id = 'acme'`);
  t.is(rows.rows.length, FAMILIES.length, 'one pattern per family');
  t.is(deduplicated, 1000 - FAMILIES.length);
  for (const r of rows.rows) {
    const fam = familyOf.get(r.id);
    t.truthy(fam);
    t.is(Number(r.frequency), perFamily.get(fam ?? '') ?? -1, `${fam} weight`);
    t.deepEqual(r.tags, [fam]);
  }
  // 1000 / 25 families: every family was seen 40 times.
  t.deepEqual([...new Set(rows.rows.map((r) => Number(r.frequency)))], [40]);
});

test.serial('held-out phrasings find their family first (precision@1 over >= 20 cases)', async (t) => {
  const cases = queryCases();
  t.true(cases.length >= 20);
  let hits = 0;
  const misses: string[] = [];
  for (const q of cases) {
    const found = await cortex.query('acme', { error_signature: q.error_signature, limit: 3 });
    const first = found[0];
    if (first && familyOf.get(first.pattern_id) === q.family) hits++;
    else misses.push(`${q.family} → ${first ? familyOf.get(first.pattern_id) : 'nothing'}`);
    t.true(found.length <= 3);
  }
  t.log(`precision@1 = ${hits}/${cases.length}`);
  t.deepEqual(misses, []);
});

test.serial('a query answers the seed fields, ranked by similarity and success; min_success_score filters', async (t) => {
  const sig = "ModuleNotFoundError: No module named 'requests'";
  const [top] = await cortex.query('acme', { error_signature: sig, error_type: 'ModuleNotFoundError' });
  t.truthy(top);
  if (!top) return;
  t.is(top.error_type, 'ModuleNotFoundError');
  t.is(top.solution_approach, 'pip install requests (add it to requirements.txt)');
  t.is(top.frequency, 40);
  t.is(top.success_score, 1);
  t.true(top.similarity > 0.7 && top.similarity <= 1.0000001);
  t.regex(top.created_at, /^\d{4}-\d\d-\d\dT/);

  // Two failed applications: success 40/42 — filtered by a higher minimum, kept by a lower one.
  await cortex.recordOutcome('acme', top.pattern_id, false);
  await cortex.recordOutcome('acme', top.pattern_id, false);
  const strict = await cortex.query('acme', { error_signature: sig, min_success_score: 0.99 });
  t.false(strict.some((p) => p.pattern_id === top.pattern_id));
  const lenient = await cortex.query('acme', { error_signature: sig, min_success_score: 0.9 });
  t.is(lenient[0]?.pattern_id, top.pattern_id);
  t.is(lenient[0]?.success_score, 40 / 42);

  // error_type restricts the candidates; limit caps the answer.
  const onlyKeyErrors = await cortex.query('acme', { error_signature: sig, error_type: 'KeyError' });
  t.true(onlyKeyErrors.every((p) => p.error_type === 'KeyError'));
  const many = await cortex.query('acme', { error_signature: 'error failed line 3', limit: 2 });
  t.true(many.length <= 2);
  // Ranked best first.
  const ranked = await cortex.query('acme', { error_signature: 'KeyError raised for key', limit: 10 });
  for (let i = 1; i < ranked.length; i++) t.true(ranked[i - 1]!.rank >= ranked[i]!.rank);
});

test.serial('patterns are per tenant', async (t) => {
  t.deepEqual(await cortex.query('globex', { error_signature: "No module named 'requests'" }), []);
  const r = await cortex.store('globex', { error_signature: "No module named 'requests'", error_type: 'ModuleNotFoundError', error_message: '', solution_approach: 'vendor it' });
  t.false(r.deduplicated);
  const again = await cortex.store('globex', { error_signature: "ModuleNotFoundError: No module named 'requests' in /x/y.py line 9", error_type: 'ModuleNotFoundError', error_message: '', solution_approach: 'vendor it' });
  t.true(again.deduplicated);
  t.is(again.pattern_id, r.pattern_id);
  t.is(again.new_frequency, 2);
  const found = await cortex.query('globex', { error_signature: "No module named 'requests'" });
  t.deepEqual(found.map((p) => p.solution_approach), ['vendor it']);
});

test.serial('concurrent stores of one error raise one weight without losing an increment', async (t) => {
  const base = { error_type: 'Segfault', error_message: 'core dumped', solution_approach: 'build with -fsanitize=address' };
  const results = await Promise.all(
    Array.from({ length: 30 }, (_, i) => cortex.store('initech', { ...base, error_signature: `Segmentation fault (core dumped) in worker ${i} at 0x7f00${(1000 + i).toString(16)}` })),
  );
  t.is(new Set(results.map((r) => r.pattern_id)).size, 1);
  t.is(results.filter((r) => !r.deduplicated).length, 1);
  t.deepEqual(results.map((r) => r.new_frequency).sort((a, b) => a - b), Array.from({ length: 30 }, (_, i) => i + 1));
});

test('bad input is refused before anything is written', async (t) => {
  const before = await db.query<{ n: string }>(`SELECT count(*)::text AS n FROM cortex_patterns`);
  const bad = [
    { error_signature: '', error_type: 'X', error_message: '', solution_approach: 's' },
    { error_signature: 'x', error_type: ' ', error_message: '', solution_approach: 's' },
    { error_signature: 'x', error_type: 'X', error_message: '', solution_approach: '' },
    { error_signature: 'x', error_type: 'X', error_message: '', solution_approach: 's', tags: [''] },
    { error_signature: 'x'.repeat(9000), error_type: 'X', error_message: '', solution_approach: 's' },
  ];
  for (const b of bad) {
    const err = await t.throwsAsync(cortex.store('acme', b));
    t.is((err as { code?: string }).code, 'bad_request', JSON.stringify(b).slice(0, 80));
  }
  for (const q of [{ error_signature: '' }, { error_signature: 'x', limit: 1000 }, { error_signature: 'x', min_success_score: 1.5 }]) {
    await t.throwsAsync(cortex.query('acme', q), { message: /required|limit|min_success_score/ });
  }
  const after = await db.query<{ n: string }>(`SELECT count(*)::text AS n FROM cortex_patterns`);
  t.is(after.rows[0]?.n, before.rows[0]?.n);
});
