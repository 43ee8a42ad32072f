// What loading the node's modules costs before it does anything (issue 15 item 4: start-up). Every `orch up` loads
// all of src/node/node.ts's graph; work done at module load (compiling a JSON schema with ajv, ~0.1 s with a fresh
// Ajv's meta-schema) is paid by every start whether or not the node ever uses it. Schemas are compiled on first use.
import test from 'ava';
import { Ajv } from 'ajv';

test("loading the node's modules compiles no JSON schema", async (t) => {
  // The base class of every Ajv (draft-07, 2019, 2020): compile() and getSchema() both compile.
  const core = Object.getPrototypeOf(Ajv.prototype) as { compile: (...a: unknown[]) => unknown };
  const compile = core.compile;
  const compiled: string[] = [];
  core.compile = function (this: unknown, ...args: unknown[]) {
    compiled.push(new Error('compiled at load').stack ?? '');
    return compile.apply(this, args);
  };
  try {
    await import('../../src/node/node.ts');
  } finally {
    core.compile = compile;
  }
  t.deepEqual(compiled, [], 'a module compiles a schema when it loads');
});
