// Splits a migration file into statements. Needed because PGlite's query() uses the extended protocol, which takes
// one statement at a time, and running statements one by one also suits CockroachDB's schema changes better.
// Understands what can hide a semicolon: comments, quoted strings and identifiers, E'' escapes, dollar quoting.

export function splitSql(sql: string): string[] {
  const statements: string[] = [];
  let start = 0;
  let meaningful = false;
  let i = 0;
  const n = sql.length;

  const push = (end: number): void => {
    const text = sql.slice(start, end).trim();
    if (meaningful && text) statements.push(text);
    meaningful = false;
  };

  while (i < n) {
    const c = sql[i]!;
    const next = sql[i + 1];
    if (c === '-' && next === '-') {
      const eol = sql.indexOf('\n', i);
      i = eol === -1 ? n : eol + 1;
      continue;
    }
    if (c === '/' && next === '*') {
      const close = sql.indexOf('*/', i + 2);
      i = close === -1 ? n : close + 2;
      continue;
    }
    if (c === ';') {
      push(i);
      start = i + 1;
      i++;
      continue;
    }
    meaningful = meaningful || !/\s/.test(c);
    if (c === "'") {
      const escapes = i > 0 && /[eE]/.test(sql[i - 1]!) && (i < 2 || !/[\w$]/.test(sql[i - 2]!));
      i = skipQuoted(sql, i, "'", escapes);
      continue;
    }
    if (c === '"') {
      i = skipQuoted(sql, i, '"', false);
      continue;
    }
    if (c === '$') {
      const tag = /^\$([A-Za-z_][A-Za-z0-9_]*)?\$/.exec(sql.slice(i));
      if (tag && !(i > 0 && /[\w$]/.test(sql[i - 1]!))) {
        const close = sql.indexOf(tag[0], i + tag[0].length);
        i = close === -1 ? n : close + tag[0].length;
        continue;
      }
    }
    i++;
  }
  push(n);
  return statements;
}

/** Index just past the closing quote; a doubled quote is an escaped one, and so is a backslash in E'' strings. */
function skipQuoted(sql: string, open: number, quote: string, backslashEscapes: boolean): number {
  let i = open + 1;
  while (i < sql.length) {
    const c = sql[i];
    if (backslashEscapes && c === '\\') {
      i += 2;
      continue;
    }
    if (c === quote) {
      if (sql[i + 1] === quote) {
        i += 2;
        continue;
      }
      return i + 1;
    }
    i++;
  }
  return sql.length;
}
