import test from 'ava';
import { splitSql } from '../../src/storage/sql-split.ts';

test('splits on semicolons and drops empty and comment-only pieces', (t) => {
  t.deepEqual(splitSql('SELECT 1;\n\n  SELECT 2 ;;\n-- trailing comment\n'), ['SELECT 1', 'SELECT 2']);
  t.deepEqual(splitSql(''), []);
  t.deepEqual(splitSql('SELECT 1'), ['SELECT 1']);
});

test('semicolons inside strings, identifiers, comments and dollar quotes do not split', (t) => {
  const sql = `-- header; with semicolon
INSERT INTO t VALUES ('a;b', 'it''s;', E'x\\';y', "odd;name");
/* block; comment */ SELECT $$ a; b $$, $tag$ c; $$ d $tag$;
SELECT 3`;
  const parts = splitSql(sql);
  t.is(parts.length, 3);
  t.true(parts[0]!.includes(`'a;b', 'it''s;', E'x\\';y', "odd;name")`));
  t.true(parts[1]!.startsWith('/* block; comment */ SELECT $$ a; b $$'));
  t.is(parts[2], 'SELECT 3');
});

test('a dollar sign in a parameter placeholder or identifier is not a quote', (t) => {
  t.deepEqual(splitSql('SELECT $1, a$b FROM t; SELECT 2'), ['SELECT $1, a$b FROM t', 'SELECT 2']);
});
