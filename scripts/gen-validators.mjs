#!/usr/bin/env node
// Generates the node config's validator as standalone JavaScript (ajv's standaloneCode) into
// src/config/validator.gen.js, so that `orch up` does not compile the config's JSON Schema with ajv at every start
// (with ajv's meta-schema: ~0.1-0.2 s of a start's CPU; issue 15 item 4). src/config/validate.ts uses it when its
// SCHEMA_HASH is the hash of the schema in src/config/schema.ts, else compiles as before (a stale file is only slower).
//   node scripts/gen-validators.mjs          regenerate
//   node scripts/gen-validators.mjs --check  fail if the file differs from what would be generated (CI, check:gen)
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { register } from 'tsx/esm/api';

const root = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
const out = path.join(root, 'src', 'config', 'validator.gen.js');
register();
const { configValidatorSource } = await import(pathToFileURL(path.join(root, 'src', 'config', 'validator-source.ts')).href);
const source = configValidatorSource();

if (process.argv.includes('--check')) {
  let current = '';
  try {
    current = readFileSync(out, 'utf8');
  } catch {
    // missing: differs
  }
  if (current !== source) {
    process.stderr.write('gen-validators: src/config/validator.gen.js is out of date; run `npm run gen:validators`\n');
    process.exit(1);
  }
  process.stdout.write('gen-validators: src/config/validator.gen.js is up to date\n');
} else {
  writeFileSync(out, source);
  process.stdout.write(`gen-validators: wrote src/config/validator.gen.js (${source.length} bytes)\n`);
}
