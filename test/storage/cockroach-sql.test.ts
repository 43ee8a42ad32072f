// orch's SQL must also run on CockroachDB (DESIGN.md, docs/COCKROACH.md). CockroachDB cannot run here, so
// scripts/check-cockroach-sql.ts reads every migration and every SQL text in src/ for what CockroachDB lacks. This
// test runs it over the tree (no finding may be left) and proves each rule fires on the construct it is for and stays
// quiet on the portable form orch uses instead.
import test from 'ava';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { checkSql, checkTree, RULES, sqlInTypeScript, stripSqlComments } from '../../scripts/check-cockroach-sql.ts';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

test('every migration and every SQL text in src/ passes the CockroachDB check', (t) => {
  const r = checkTree(ROOT);
  t.true(r.migrations >= 12, `read ${r.migrations} migrations`);
  t.true(r.sqlTexts - r.migrations >= 100, `read ${r.sqlTexts - r.migrations} SQL texts in TypeScript`);
  t.deepEqual(
    r.findings.map((f) => `${f.file}:${f.line} [${f.rule}] ${f.text}`),
    [],
    'constructs CockroachDB lacks (see docs/COCKROACH.md)',
  );
  for (const a of r.accepted) t.log(`accepted: ${a.file}:${a.line} [${a.rule}] ${a.reason}`);
});

// Each rule: SQL it must refuse, and the portable form that must pass.
const CASES: Record<string, { bad: string; good: string; migration?: boolean }> = {
  'advisory-lock': { bad: 'SELECT pg_advisory_xact_lock(42)', good: "INSERT INTO migration_lock (id, holder, expires_at) VALUES (1, $1, now()) ON CONFLICT (id) DO NOTHING" },
  'listen-notify': { bad: "NOTIFY orch_events, 'x'", good: 'SELECT seq FROM event_log WHERE stream = $1' },
  trigger: { bad: 'CREATE TRIGGER t AFTER INSERT ON x FOR EACH ROW EXECUTE FUNCTION f()', good: 'CREATE TABLE x (id UUID PRIMARY KEY)', migration: true },
  'stored-procedure': { bad: "CREATE FUNCTION f() RETURNS trigger AS $$ BEGIN RETURN NEW; END $$ LANGUAGE plpgsql", good: 'CREATE INDEX x_by_y ON x (y)', migration: true },
  serial: { bad: 'CREATE TABLE x (id BIGSERIAL PRIMARY KEY)', good: 'CREATE TABLE x (id UUID PRIMARY KEY, seq INT8 NOT NULL)', migration: true },
  sequence: { bad: "SELECT nextval('x_seq')", good: 'SELECT COALESCE(MAX(seq), 0) + 1 FROM execution_events WHERE execution_id = $1' },
  extension: { bad: 'CREATE EXTENSION pgcrypto', good: 'CREATE TABLE k (id TEXT PRIMARY KEY)', migration: true },
  'lock-table': { bad: 'LOCK TABLE executions IN EXCLUSIVE MODE', good: 'SELECT id FROM executions WHERE id = $1 FOR UPDATE' },
  'system-column': { bad: 'SELECT xmin FROM executions', good: 'SELECT epoch FROM executions' },
  'table-options': { bad: 'CREATE TEMP TABLE scratch (id UUID)', good: 'CREATE TABLE scratch (id UUID PRIMARY KEY)', migration: true },
  'range-types': { bad: 'CREATE TABLE r (during TSTZRANGE)', good: 'CREATE TABLE r (starts TIMESTAMPTZ, ends TIMESTAMPTZ)', migration: true },
  maintenance: { bad: 'VACUUM executions', good: 'DELETE FROM executions WHERE id = $1' },
  xml: { bad: "SELECT xmlparse(document '<a/>')", good: "SELECT '{}'::JSONB" },
  jsonpath: { bad: "SELECT jsonb_path_query(payload, '$.a') FROM x", good: "SELECT payload->>'a' FROM x" },
  'server-admin': { bad: 'SELECT pg_terminate_backend(123)', good: 'SELECT 1' },
  isolation: { bad: 'BEGIN ISOLATION LEVEL REPEATABLE READ', good: 'BEGIN ISOLATION LEVEL SERIALIZABLE' },
  'int-width': { bad: 'CREATE TABLE c (id TEXT PRIMARY KEY, n INT NOT NULL)', good: 'CREATE TABLE c (id TEXT PRIMARY KEY, n INT4 NOT NULL, tags INT8[])', migration: true },
  'storage-params': {
    bad: 'ALTER TABLE executions SET (autovacuum_vacuum_scale_factor = 0.02)',
    good: '-- postgresql-only\nALTER TABLE executions SET (fillfactor = 70, autovacuum_vacuum_scale_factor = 0.02)',
    migration: true,
  },
  'int-result': { bad: 'SELECT count(*)::INT AS n FROM x', good: "SELECT count(*)::INT4 AS n FROM x WHERE at < now() - ($1::INT * INTERVAL '1 millisecond')" },
};

test('each rule refuses its construct and passes the portable form', (t) => {
  t.deepEqual(Object.keys(CASES).sort(), RULES.map((r) => r.id).sort(), 'a case for every rule');
  for (const [id, c] of Object.entries(CASES)) {
    const bad = checkSql('x.sql', 1, c.bad, c.migration ?? false).map((f) => f.rule);
    t.true(bad.includes(id), `${id} refuses: ${c.bad} (got ${bad.join(', ') || 'nothing'})`);
    t.deepEqual(checkSql('x.sql', 1, c.good, c.migration ?? false), [], `${id} passes: ${c.good}`);
  }
});

test('a postgresql-only mark covers its own statement in a migration, not the next one', (t) => {
  const file = '-- postgresql-only\nALTER TABLE a SET (autovacuum_vacuum_scale_factor = 0.02);\nALTER TABLE b SET (autovacuum_vacuum_threshold = 10);\n';
  t.deepEqual(checkSql('m.sql', 1, file.split(';')[0]!, true), []);
  t.deepEqual(checkSql('m.sql', 3, file.split(';')[1]!, true).map((f) => f.rule), ['storage-params']);
  // Not a migration: the mark means nothing in TypeScript SQL, which runs on every engine.
  t.deepEqual(checkSql('f.ts', 1, '-- postgresql-only\nALTER TABLE a SET (autovacuum_vacuum_threshold = 10)', false).map((f) => f.rule), ['storage-params']);
});

test('comments are not SQL; literals are found in TypeScript with their line, substitutions included', (t) => {
  t.deepEqual(checkSql('m.sql', 1, '-- no SERIAL here, no LISTEN/NOTIFY\n/* nor pg_advisory_lock */\nCREATE TABLE a (id UUID PRIMARY KEY);', true), []);
  t.is(stripSqlComments("SELECT '--not a comment' -- a comment\n"), "SELECT '--not a comment' \n");
  const src = [
    "const a = 'a cluster of prose, not SQL';",
    'await db.query(`SELECT ${COLUMNS}',
    '  FROM t WHERE id = $1`, [id]);',
    "await db.query('NOTIFY x');",
  ].join('\n');
  const texts = sqlInTypeScript('f.ts', src);
  t.deepEqual(texts.map((x) => x.line), [2, 4]);
  t.true(texts[0]!.text.startsWith('SELECT sub_expr'));
  const findings = texts.flatMap((x) => checkSql('f.ts', x.line, x.text, false));
  t.deepEqual(findings.map((f) => [f.rule, f.line]), [['listen-notify', 4]]);
});
