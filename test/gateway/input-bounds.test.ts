// Issue 14 finding 4, replayed (scaled to stay fast) against a real in-process node while /health is probed: a
// 1.4 MB agent manifest with 100,000 `spec.env` keys took 510 s and held /health for 8.5 minutes. Manifests and JSON
// bodies now meet size, node-count, depth and alias limits before anything expensive parses them (413 / 422), and
// /health keeps answering meanwhile. A YAML alias bomb is 422 (was 500).
import test from 'ava';
import { randomUUID } from 'node:crypto';
import { startTestNode, type TestNode } from '../support/in-process-node.ts';
import { MANIFEST_LIMITS } from '../../src/agents/manifest/yaml-limits.ts';
import { JSON_LIMITS } from '../../src/gateway/http/input-guard.ts';

const cleanups: Array<() => Promise<unknown> | unknown> = [];
let n: TestNode;
let token: string;

test.before(async () => {
  n = await startTestNode((fn) => void cleanups.push(fn), { name: 'bounds-limits' });
  token = await n.token('bounds-limits', 'tenant-admin');
});

test.after.always(async () => {
  for (const fn of cleanups.reverse()) await fn();
});

/**
 * Sends `attack` while /health is asked again and again (one at a time); answers the attack's response, how long it
 * took and the slowest /health answer. The node runs in this process: a blocked event loop delays both.
 */
async function underProbe(attack: () => Promise<Response>): Promise<{ status: number; body: Record<string, unknown>; tookMs: number; worstHealthMs: number; probes: number }> {
  let done = false;
  let worst = 0;
  let probes = 0;
  const probe = (async () => {
    while (!done) {
      const t0 = performance.now();
      const r = await fetch(`${n.http}/health`);
      await r.arrayBuffer();
      worst = Math.max(worst, performance.now() - t0);
      probes++;
    }
  })();
  const t0 = performance.now();
  const res = await attack();
  const text = await res.text();
  const tookMs = performance.now() - t0;
  done = true;
  await probe;
  return { status: res.status, body: (text ? JSON.parse(text) : {}) as Record<string, unknown>, tookMs, worstHealthMs: worst, probes };
}

function post(url: string, body: string, contentType: string): Promise<Response> {
  return fetch(`${n.http}${url}`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': contentType }, body });
}

function agentWithEnv(keys: number): string {
  const lines = [`apiVersion: orch.dev/v1`, `kind: Agent`, `metadata: { name: env-${randomUUID().slice(0, 6)}, version: 1.0.0 }`, `spec:`, `  runtime: { language: node, version: "20" }`, `  task: { instruction: hi }`, `  env:`];
  for (let i = 0; i < keys; i++) lines.push(`    K${i}: v`);
  return `${lines.join('\n')}\n`;
}

/** Health must keep answering: far below the minutes of the report even on a loaded two-core machine. */
const HEALTH_BOUND_MS = 1_000;

test.serial('the report: 100,000 spec.env keys (1.4 MB) is 413 at once, /health answering throughout', async (t) => {
  const yaml = agentWithEnv(100_000);
  t.true(yaml.length > 1_000_000);
  const r = await underProbe(() => post('/v1/agents', JSON.stringify({ manifest_yaml: yaml }), 'application/json'));
  t.is(r.status, 413, JSON.stringify(r.body));
  t.regex(String(r.body.error), new RegExp(`at most ${MANIFEST_LIMITS.maxBytes} are accepted`));
  t.true(r.worstHealthMs < HEALTH_BOUND_MS, `/health took ${Math.round(r.worstHealthMs)} ms`);
  const asYaml = await underProbe(() => post('/v1/agents', yaml, 'application/yaml'));
  t.is(asYaml.status, 413, JSON.stringify(asYaml.body));
  t.log(`100k keys: ${Math.round(r.tookMs)} ms (JSON), ${Math.round(asYaml.tookMs)} ms (YAML); worst /health ${Math.round(Math.max(r.worstHealthMs, asYaml.worstHealthMs))} ms`);
});

test.serial('15,000 keys under the size limit (10k took 3.4 s before) is 422 by node count, /health answering', async (t) => {
  const yaml = agentWithEnv(15_000);
  t.true(Buffer.byteLength(yaml) < MANIFEST_LIMITS.maxBytes);
  const r = await underProbe(() => post('/v1/agents', yaml, 'application/yaml'));
  t.is(r.status, 422, JSON.stringify(r.body));
  t.regex(JSON.stringify(r.body), new RegExp(`more than ${MANIFEST_LIMITS.maxNodes} keys and values`));
  t.true(r.worstHealthMs < HEALTH_BOUND_MS, `/health took ${Math.round(r.worstHealthMs)} ms`);
  const wf = await underProbe(() =>
    post('/v1/workflows', `apiVersion: orch.dev/v1\nkind: Workflow\nmetadata: { name: big, version: 1.0.0, labels: {${Array.from({ length: 15_000 }, (_, i) => `k${i}: v`).join(', ')}} }\nspec: {}\n`, 'application/yaml'),
  );
  t.is(wf.status, 422, JSON.stringify(wf.body));
  t.true(wf.worstHealthMs < HEALTH_BOUND_MS, `/health took ${Math.round(wf.worstHealthMs)} ms`);
  t.log(`15k keys: agent ${Math.round(r.tookMs)} ms, workflow ${Math.round(wf.tookMs)} ms; worst /health ${Math.round(Math.max(r.worstHealthMs, wf.worstHealthMs))} ms (${r.probes + wf.probes} probes)`);
  // A manifest at the limits' scale but legal still deploys.
  const fine = await underProbe(() => post('/v1/agents', agentWithEnv(500), 'application/yaml'));
  t.is(fine.status, 201, JSON.stringify(fine.body));
});

/** Nine levels of nine aliases each: 9^9 (387 million) strings once expanded. */
function aliasBomb(): string {
  const lines = ['l0: &l0 [x, x, x, x, x, x, x, x, x]'];
  for (let i = 1; i < 9; i++) lines.push(`l${i}: &l${i} [${Array.from({ length: 9 }, () => `*l${i - 1}`).join(', ')}]`);
  return lines.join('\n');
}

test.serial('a YAML alias bomb is 422 (was 500), for agents and workflows', async (t) => {
  const agent = `apiVersion: orch.dev/v1\nkind: Agent\nmetadata: { name: bomb, version: 1.0.0 }\nspec:\n  runtime: { language: node, version: "20" }\n  task: { instruction: hi }\n${aliasBomb()}\n`;
  const r = await underProbe(() => post('/v1/agents', agent, 'application/yaml'));
  t.is(r.status, 422, JSON.stringify(r.body));
  t.regex(JSON.stringify(r.body), /aliases/);
  const wf = await underProbe(() => post('/v1/workflows', `apiVersion: orch.dev/v1\nkind: Workflow\nmetadata: { name: bomb, version: 1.0.0 }\n${aliasBomb()}\nspec: {}\n`, 'application/yaml'));
  t.is(wf.status, 422, JSON.stringify(wf.body));
  t.true(Math.max(r.worstHealthMs, wf.worstHealthMs) < HEALTH_BOUND_MS);
  // More alias references than the limit are refused before composing.
  const many = `apiVersion: orch.dev/v1\nkind: Agent\nmetadata: { name: many, version: 1.0.0 }\nx: &x 1\ny: [${Array.from({ length: 200 }, () => '*x').join(', ')}]\n`;
  const m = await underProbe(() => post('/v1/agents', many, 'application/yaml'));
  t.is(m.status, 422, JSON.stringify(m.body));
  t.regex(JSON.stringify(m.body), /more than 100 aliases/);
});

test.serial('JSON bodies: nesting past the depth limit is 422 and too many values 413, before parsing; /health answering', async (t) => {
  const deep = await underProbe(() => post('/v1/stimuli', `{"source":"s","content":"c","x":${'['.repeat(100_000)}${']'.repeat(100_000)}}`, 'application/json'));
  t.is(deep.status, 422, JSON.stringify(deep.body));
  t.regex(String(deep.body.error), new RegExp(`nests deeper than ${JSON_LIMITS.maxDepth} levels`));
  const wide = await underProbe(() => post('/v1/stimuli', `{"source":"s","content":"c","x":[${Array(300_000).fill('1').join(',')}]}`, 'application/json'));
  t.is(wide.status, 413, JSON.stringify(wide.body));
  const keys = await underProbe(() => post('/v1/executions', `{${Array.from({ length: 200_000 }, (_, i) => `"k${i}":1`).join(',')}}`, 'application/json'));
  t.is(keys.status, 413, JSON.stringify(keys.body));
  t.true(Math.max(deep.worstHealthMs, wide.worstHealthMs, keys.worstHealthMs) < HEALTH_BOUND_MS);
  t.log(`deep ${Math.round(deep.tookMs)} ms, wide ${Math.round(wide.tookMs)} ms, 200k keys ${Math.round(keys.tookMs)} ms; worst /health ${Math.round(Math.max(deep.worstHealthMs, wide.worstHealthMs, keys.worstHealthMs))} ms`);
  // A stimulus whose content is JSON too deep for the later parse is refused the same way.
  const content = await underProbe(() => post('/v1/stimuli', JSON.stringify({ source: 's', content: `${'['.repeat(1000)}${']'.repeat(1000)}` }), 'application/json'));
  t.is(content.status, 422, JSON.stringify(content.body));
});

test.serial('a tenant pattern that backtracks ((a|aa)+$, (a+)+$) validates a long run input at once, /health answering', async (t) => {
  // `(a|aa)+$` passed the old syntactic guard and V8 backtracks on it exponentially: this run's input validation
  // held the event loop for good. On RE2 (linear time) the run is refused by its schema at once.
  for (const [i, pattern] of ['(a|aa)+$', '(a+)+$'].entries()) {
    const name = `redos-${i}-${randomUUID().slice(0, 6)}`;
    const yaml = `apiVersion: orch.dev/v1
kind: Workflow
metadata:
  name: ${name}
  version: 1.0.0
  input_schema:
    type: object
    properties: { title: { type: string, pattern: ${JSON.stringify(pattern)} } }
spec:
  initial_state: done
  states:
    done: { kind: System, command: 'update_context {"x": 1}', transitions: [] }
`;
    const deployed = await post('/v1/workflows', JSON.stringify({ manifest_yaml: yaml }), 'application/json');
    t.is(deployed.status, 201, await deployed.text());
    const r = await underProbe(() => post(`/v1/workflows/${name}/run`, JSON.stringify({ input: { title: `${'a'.repeat(50_000)}!` } }), 'application/json'));
    t.is(r.status, 422, JSON.stringify(r.body));
    t.regex(JSON.stringify(r.body), /input\.title/);
    t.true(r.tookMs < 1_000, `${pattern}: the run was answered after ${Math.round(r.tookMs)} ms`);
    t.true(r.worstHealthMs < HEALTH_BOUND_MS, `/health took ${Math.round(r.worstHealthMs)} ms`);
    t.log(`${pattern} over 50,001 characters: ${Math.round(r.tookMs)} ms; worst /health ${Math.round(r.worstHealthMs)} ms`);
  }
});
