// CockroachDB compatibility check of orch's SQL (docs/COCKROACH.md). CockroachDB cannot be installed on these
// machines, so this reads the SQL instead of running it: every migration in src/storage/migrations/*.sql (comments
// stripped) and every SQL text in src/**/*.ts — string and template literals found with the TypeScript parser whose
// text starts with a SQL verb (a `${...}` substitution is read as an identifier). Each text is matched against rules
// for what CockroachDB (v24.2, the version docker-compose.cluster.yml runs) lacks or does differently.
//
//   npx tsx scripts/check-cockroach-sql.ts        prints the findings, exits 1 when there is one
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { isPostgresqlOnly } from '../src/storage/migration-guard.ts';
import { splitSql } from '../src/storage/sql-split.ts';

export interface Rule {
  id: string;
  /** What CockroachDB does instead, and what orch does. */
  why: string;
  pattern: RegExp;
  /** Only for migrations (DDL rules). */
  ddlOnly?: boolean;
  /** Allowed in a migration statement marked `-- postgresql-only` (migrate.ts skips it on CockroachDB). */
  guardable?: boolean;
}

export const RULES: readonly Rule[] = [
  { id: 'advisory-lock', why: 'CockroachDB has no advisory locks (the functions exist as no-ops); use a lock row (migration-lock.ts) or a lease row', pattern: /\bpg_(try_)?advisory(_xact)?_(un)?lock(_shared)?(_all)?\b/i },
  { id: 'listen-notify', why: 'CockroachDB has no LISTEN/NOTIFY; orch fans out through Redis or the in-process bus', pattern: /(^|;)\s*(LISTEN|UNLISTEN|NOTIFY)\s+[\w"*]|\bpg_notify\s*\(/i },
  { id: 'trigger', why: 'no triggers before CockroachDB 24.3; write the effect in the same transaction instead', pattern: /\bCREATE\s+(OR\s+REPLACE\s+)?(CONSTRAINT\s+|EVENT\s+)?TRIGGER\b/i },
  { id: 'stored-procedure', why: 'no stored procedures / PL/pgSQL in orch (DESIGN.md): CockroachDB supports only part of them', pattern: /\bCREATE\s+(OR\s+REPLACE\s+)?(FUNCTION|PROCEDURE)\b|\bLANGUAGE\s+plpgsql\b|(^|;)\s*DO\s+\$|(^|;)\s*CALL\s+\w/i },
  { id: 'serial', why: 'SERIAL is unique_rowid() on CockroachDB (not consecutive): use UUID/text ids and explicit sequence columns', pattern: /\b(SMALL|BIG)?SERIAL[248]?\b/i },
  { id: 'sequence', why: 'sequences are slow and not gap-free on CockroachDB: use explicit per-stream sequence columns', pattern: /\bCREATE\s+SEQUENCE\b|\bnextval\s*\(|\bsetval\s*\(/i },
  { id: 'extension', why: 'CockroachDB has no extensions (CREATE EXTENSION)', pattern: /\bCREATE\s+EXTENSION\b/i },
  { id: 'lock-table', why: 'CockroachDB has no LOCK TABLE', pattern: /(^|;)\s*LOCK\s+(TABLE\s+)?\w+\s+IN\s+\w+|(^|;)\s*LOCK\s+TABLE\b/i },
  { id: 'system-column', why: 'no xmin/ctid/oid system columns on CockroachDB', pattern: /\b(xmin|xmax|ctid|cmin|cmax)\b/i },
  { id: 'table-options', why: 'CockroachDB has no INHERITS, UNLOGGED (ignored), EXCLUDE constraints, deferrable constraints, rules or temp tables (experimental)', pattern: /\bINHERITS\s*\(|\bCREATE\s+UNLOGGED\b|\bEXCLUDE\s+USING\b|\bDEFERRABLE\b|\bINITIALLY\s+DEFERRED\b|\bCREATE\s+(OR\s+REPLACE\s+)?RULE\b|\bCREATE\s+(TEMP|TEMPORARY)\s+TABLE\b/i },
  { id: 'range-types', why: 'CockroachDB has no range types', pattern: /\b(int4|int8|num|ts|tstz|date)range\b|\bint4multirange\b/i },
  { id: 'maintenance', why: 'VACUUM / CLUSTER / REINDEX do not exist on CockroachDB', pattern: /(^|;)\s*(VACUUM|CLUSTER|REINDEX)\b/i },
  { id: 'xml', why: 'no XML functions on CockroachDB', pattern: /\bxml(parse|serialize|element|agg|root)\s*\(/i },
  { id: 'jsonpath', why: 'JSONPath functions are partial on CockroachDB 24.2; use -> / ->> / @>', pattern: /\bjsonb_path_\w+\s*\(/i },
  { id: 'server-admin', why: 'pg_stat_activity / pg_terminate_backend / pg_cancel_backend behave differently on CockroachDB (sessions, not pids)', pattern: /\bpg_(stat_activity|terminate_backend|cancel_backend)\b/i },
  { id: 'isolation', why: 'CockroachDB runs SERIALIZABLE (READ COMMITTED only when enabled cluster-wide): orch uses SERIALIZABLE and retries 40001', pattern: /\bISOLATION\s+LEVEL\s+(READ\s+UNCOMMITTED|REPEATABLE\s+READ)\b/i },
  {
    id: 'int-width',
    why: 'INT / INTEGER is 64-bit on CockroachDB (PostgreSQL: 32-bit), and pg returns 64-bit integers as strings: declare INT4 / INT8 / BIGINT explicitly',
    pattern: /(^|[(,]\s*)"?\w+"?\s+(INT|INTEGER)\b(?!\s*\[)/i,
    ddlOnly: true,
  },
  {
    id: 'storage-params',
    why: 'CockroachDB refuses PostgreSQL storage parameters other than fillfactor / autovacuum_enabled (it has no autovacuum): mark the statement `-- postgresql-only` (migration-guard.ts)',
    pattern: /\b(autovacuum_(?!enabled\b)\w+|toast\.\w+|log_autovacuum_min_duration|vacuum_truncate|vacuum_index_cleanup|parallel_workers)\s*=/i,
    guardable: true,
  },
  {
    id: 'int-result',
    why: 'a result cast to INT / INTEGER is INT8 on CockroachDB and comes back as a string: cast to INT4 (or read ::TEXT and convert)',
    pattern: /::\s*(INT|INTEGER)\s+AS\s+\w+/i,
  },
];

export interface Finding {
  file: string;
  line: number;
  rule: string;
  why: string;
  text: string;
}

/**
 * Findings looked at and accepted, each with its reason. Matched by file and rule; `snippet` must occur in the text,
 * so a new occurrence elsewhere in the file is still reported.
 */
export const ACCEPTED: readonly { file: string; rule: string; snippet: string; reason: string }[] = [];

// Upper case only: orch writes SQL verbs in capitals, and prose ("cluster members", "set up") must not count.
// Clause words count too, so fragments a query is assembled from are read as well.
const SQL_START = /^\s*(\(\s*)?(SELECT|INSERT|UPDATE|DELETE|UPSERT|WITH|CREATE|ALTER|DROP|TRUNCATE|BEGIN|COMMIT|ROLLBACK|SET|SHOW|LISTEN|UNLISTEN|NOTIFY|LOCK|VACUUM|CLUSTER|REINDEX|COPY|DO|CALL|SAVEPOINT|RELEASE|WHERE|FROM|JOIN|VALUES|RETURNING|ON CONFLICT|ORDER BY|GROUP BY)\s/;

/** Strips `-- ...` comments (outside quotes) and block comments from SQL text. */
export function stripSqlComments(sql: string): string {
  let out = '';
  let quote: string | null = null;
  for (let i = 0; i < sql.length; i++) {
    const c = sql[i]!;
    if (quote) {
      out += c;
      if (c === quote) quote = null;
      continue;
    }
    if (c === "'" || c === '"') {
      quote = c;
      out += c;
      continue;
    }
    if (c === '-' && sql[i + 1] === '-') {
      while (i < sql.length && sql[i] !== '\n') i++;
      out += '\n';
      continue;
    }
    if (c === '/' && sql[i + 1] === '*') {
      const end = sql.indexOf('*/', i + 2);
      const skipped = sql.slice(i, end < 0 ? sql.length : end + 2);
      out += skipped.replace(/[^\n]/g, ' ');
      i = end < 0 ? sql.length : end + 1;
      continue;
    }
    out += c;
  }
  return out;
}

/** SQL texts of a TypeScript source: literals that start with a SQL verb, with their 1-based line. */
export function sqlInTypeScript(fileName: string, source: string): { line: number; text: string }[] {
  const sf = ts.createSourceFile(fileName, source, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
  const found: { line: number; text: string }[] = [];
  const visit = (node: ts.Node): void => {
    let text: string | undefined;
    if (ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node)) text = node.text;
    else if (ts.isTemplateExpression(node)) text = node.head.text + node.templateSpans.map((s) => `sub_expr${s.literal.text}`).join('');
    if (text !== undefined && SQL_START.test(text) && /\s/.test(text.trim())) {
      found.push({ line: sf.getLineAndCharacterOfPosition(node.getStart(sf)).line + 1, text });
      return;
    }
    ts.forEachChild(node, visit);
  };
  visit(sf);
  return found;
}

export function checkSql(file: string, line: number, sql: string, isMigration: boolean): Finding[] {
  const text = stripSqlComments(sql);
  const guarded = isMigration && isPostgresqlOnly(sql);
  const findings: Finding[] = [];
  for (const rule of RULES) {
    if (rule.guardable && guarded) continue;
    if (rule.ddlOnly && !isMigration && !/\b(CREATE|ALTER)\s+TABLE\b/i.test(text)) continue;
    const m = rule.pattern.exec(text);
    if (!m) continue;
    const before = text.slice(0, m.index);
    const at = line + (before.match(/\n/g)?.length ?? 0);
    const snippet = text.slice(Math.max(0, m.index - 20), m.index + m[0].length + 20).replace(/\s+/g, ' ').trim();
    findings.push({ file, line: at, rule: rule.id, why: rule.why, text: snippet });
  }
  return findings;
}

function walk(dir: string, out: string[]): string[] {
  for (const name of readdirSync(dir)) {
    const p = path.join(dir, name);
    if (statSync(p).isDirectory()) {
      if (name !== 'gen' && name !== 'node_modules') walk(p, out);
    } else if (p.endsWith('.ts') || p.endsWith('.sql')) out.push(p);
  }
  return out;
}

export interface Report {
  migrations: number;
  tsFiles: number;
  sqlTexts: number;
  findings: Finding[];
  accepted: (Finding & { reason: string })[];
}

/** Checks the whole tree under `root` (the repository). */
export function checkTree(root: string): Report {
  const files = walk(path.join(root, 'src'), []).sort();
  const report: Report = { migrations: 0, tsFiles: 0, sqlTexts: 0, findings: [], accepted: [] };
  for (const abs of files) {
    const file = path.relative(root, abs);
    const source = readFileSync(abs, 'utf8');
    let found: Finding[] = [];
    if (file.endsWith('.sql')) {
      report.migrations++;
      report.sqlTexts++;
      // Statement by statement: a `-- postgresql-only` mark covers its own statement only.
      let at = 0;
      for (const statement of splitSql(source)) {
        const offset = source.indexOf(statement, at);
        at = offset + statement.length;
        found.push(...checkSql(file, 1 + (source.slice(0, offset).match(/\n/g)?.length ?? 0), statement, true));
      }
    } else {
      const texts = sqlInTypeScript(file, source);
      if (texts.length > 0) report.tsFiles++;
      report.sqlTexts += texts.length;
      for (const t of texts) found.push(...checkSql(file, t.line, t.text, false));
    }
    for (const f of found) {
      const ok = ACCEPTED.find((a) => a.file === f.file && a.rule === f.rule && f.text.toLowerCase().includes(a.snippet.toLowerCase()));
      if (ok) report.accepted.push({ ...f, reason: ok.reason });
      else report.findings.push(f);
    }
  }
  return report;
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
  const r = checkTree(root);
  process.stdout.write(`checked ${r.migrations} migrations and ${r.sqlTexts - r.migrations} SQL texts in ${r.tsFiles} TypeScript files against ${RULES.length} rules\n`);
  for (const a of r.accepted) process.stdout.write(`accepted ${a.file}:${a.line} [${a.rule}] ${a.text} — ${a.reason}\n`);
  for (const f of r.findings) process.stdout.write(`${f.file}:${f.line} [${f.rule}] ${f.text}\n    ${f.why}\n`);
  process.exitCode = r.findings.length > 0 ? 1 : 0;
}
