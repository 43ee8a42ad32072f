// Issue 15 item 10: docs/CONFIG.md said it showed every key and omitted spec.metrics (and others). Every key of the
// NodeConfig JSON Schema must be written as a key (`name:`) in the doc's "Format and defaults" block, under its
// parents in order (spec.cortex.embedding.model: `cortex:`, then `embedding:`, then `model:`), and each section of
// spec on a line of its own at two spaces. A key added to the schema without a line in the doc fails here.
import test from 'ava';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { nodeConfigSchema } from '../../src/config/schema.ts';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

interface SchemaNode {
  properties?: Record<string, SchemaNode>;
  items?: SchemaNode;
}

/** Every key path of the schema; array items are walked through (their keys belong to the array's key). */
function keyPaths(node: SchemaNode, prefix: string[] = []): string[][] {
  const out: string[][] = [];
  const props = node.properties ?? node.items?.properties;
  for (const [key, child] of Object.entries(props ?? {})) {
    const p = [...prefix, key];
    out.push(p);
    out.push(...keyPaths(child, p));
  }
  return out;
}

async function formatBlock(): Promise<string> {
  const doc = await readFile(path.join(ROOT, 'docs/CONFIG.md'), 'utf8');
  const section = doc.slice(doc.indexOf('## Format and defaults'));
  const block = /```yaml\n([\s\S]*?)```/.exec(section)?.[1];
  if (!block) throw new Error('docs/CONFIG.md has no yaml block under "## Format and defaults"');
  return block;
}

const escape = (s: string): string => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

test('every key of the NodeConfig schema is in docs/CONFIG.md, under its parents', async (t) => {
  const block = await formatBlock();
  const paths = keyPaths(nodeConfigSchema as SchemaNode);
  t.true(paths.length > 100, `the walk found the keys (${paths.length})`);
  const missing: string[] = [];
  for (const p of paths) {
    let at = 0;
    for (const key of p) {
      const m = new RegExp(`(^|[\\s{,])${escape(key)}:`, 'm').exec(block.slice(at));
      if (!m) {
        missing.push(p.join('.'));
        break;
      }
      at += m.index + m[0].length;
    }
  }
  t.deepEqual(missing, [], `keys of src/config/schema.ts missing from docs/CONFIG.md: ${missing.join(', ')}`);
});

test('each section of spec has its own line in the block', async (t) => {
  const block = await formatBlock();
  const spec = (nodeConfigSchema as SchemaNode).properties?.spec?.properties ?? {};
  const missing = Object.keys(spec).filter((k) => !new RegExp(`^ {2}${escape(k)}:`, 'm').test(block));
  t.deepEqual(missing, []);
});

test('the check fails for a key the doc lacks', async (t) => {
  // The doc before issue 15 had no metrics line: the same search on a block without it finds nothing.
  const block = (await formatBlock()).replace(/^ {2}metrics:.*$/m, '');
  t.false(/(^|[\s{,])allow_remote:/m.test(block));
});
