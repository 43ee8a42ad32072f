// The node config's validator is generated at build time (scripts/gen-validators.mjs, src/config/validator.gen.js):
// a start validates its config without compiling the schema with ajv (issue 15 item 4: start-up). The file must be
// the one the current schema gives (check:gen runs the same comparison), and validation must answer as before:
// test/config/*.test.ts check its messages through it.
import test from 'ava';
import { readFile } from 'node:fs/promises';
import { loadNodeConfig } from '../../src/config/load.ts';
import { configSchemaHash, configValidatorSource } from '../../src/config/validator-source.ts';
import { SCHEMA_HASH } from '../../src/config/validator.gen.js';
import { ajvCompilations } from '../support/ajv-compilations.ts';

test('src/config/validator.gen.js is generated from the current schema (`npm run gen:validators`)', async (t) => {
  t.is(SCHEMA_HASH, configSchemaHash());
  t.is(await readFile(new URL('../../src/config/validator.gen.js', import.meta.url), 'utf8'), configValidatorSource());
});

test('loading a config, good or bad, compiles no JSON schema', async (t) => {
  const { stacks } = await ajvCompilations(() => {
    const good = loadNodeConfig({ text: 'apiVersion: orch.dev/v1\nkind: NodeConfig\nspec:\n  http: { port: 9090 }\n', env: {} });
    t.is(good.http.port, 9090);
    t.throws(() => loadNodeConfig({ text: 'apiVersion: orch.dev/v1\nkind: NodeConfig\nspec:\n  htp: {}\n', env: {} }), { message: /spec\.htp.*unknown key/ });
    t.throws(() => loadNodeConfig({ text: 'apiVersion: orch.dev/v1\nkind: NodeConfig\nspec:\n  database: { url: "mysql://x" }\n', env: {} }), { message: /spec\.database\.url: must be a postgres:\/\/ or postgresql:\/\/ URL/ });
  });
  t.is(stacks.length, 0, 'the config schema was compiled');
});
