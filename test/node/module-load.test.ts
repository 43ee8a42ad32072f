// What loading the node's modules costs before it does anything (issue 15 item 4: start-up). Every `orch up` loads
// all of src/node/node.ts's graph; work done at module load (compiling a JSON schema with ajv, ~0.1 s with a fresh
// Ajv's meta-schema) is paid by every start whether or not the node ever uses it. Schemas are compiled on first use.
import test from 'ava';
import { ajvCompilations } from '../support/ajv-compilations.ts';

test("loading the node's modules compiles no JSON schema", async (t) => {
  const { stacks } = await ajvCompilations(() => import('../../src/node/node.ts'));
  t.deepEqual(stacks, [], 'a module compiles a schema when it loads');
});
