// Issue 14 finding 10, in process on a real PGlite database: under process isolation AttestAgent accepted
// `container_id = process-<execution_id>`, so knowing two ids (agent and execution) was enough to open a session for
// someone else's execution; and an all-zero (small-order) Ed25519 key was registered. Now the proof is
// `process-<execution_id>:<secret>` with the secret the execution loop hands into the sandbox (only its SHA-256 is
// stored), and invalid or small-order keys are refused in both key forms. The real sandbox's environment is checked
// by test/seal/e2e.test.ts.
import test from 'ava';
import { createPublicKey } from 'node:crypto';
import { generateKeyPair, publicKeyBase64, publicKeyPem } from '../../src/seal/client.ts';
import { fixture, type Fixture } from './harness.ts';

let f: Fixture;
test.before(async () => {
  f = await fixture();
});
test.after.always(async () => f?.close());

const key = () => publicKeyBase64(generateKeyPair().publicKey);

test('process isolation: the two ids alone are refused; the secret from the sandbox is the proof', async (t) => {
  const x = await f.newExecution();
  const attest = (container_id: string, public_key = key()) => f.seal.attest({ agent_id: x.agentId, execution_id: x.executionId, container_id, public_key });
  // The attack as written: the id anyone can derive.
  await t.throwsAsync(attest(`process-${x.executionId}`), { message: /attestation refused: container_id does not belong to the execution/ });
  // The id with a guessed, empty or truncated secret; the secret without the id; another execution's proof.
  const secret = x.containerId.slice(`process-${x.executionId}:`.length);
  t.true(secret.length >= 43, 'a 256-bit secret');
  for (const wrong of [`process-${x.executionId}:`, `process-${x.executionId}:${'A'.repeat(43)}`, `process-${x.executionId}:${secret.slice(0, -1)}`, secret, `${x.containerId}x`]) {
    await t.throwsAsync(attest(wrong), { message: /refused/ }, wrong);
  }
  const other = await f.newExecution();
  await t.throwsAsync(attest(other.containerId), { message: /refused/ });
  // The proof.
  const ok = await attest(x.containerId);
  t.truthy(ok.security_token);
  // The stored record is the hash, never the secret.
  const row = (await f.db.query<{ container_id: string; attestation_secret_sha256: string }>('SELECT container_id, attestation_secret_sha256 FROM executions WHERE id = $1', [x.executionId])).rows[0];
  t.is(row?.container_id, `process-${x.executionId}`);
  t.regex(row?.attestation_secret_sha256 ?? '', /^[0-9a-f]{64}$/);
  t.false(JSON.stringify(row).includes(secret));
});

test('a process sandbox recorded without a secret (an older node) cannot be attested by its id', async (t) => {
  const x = await f.newExecution();
  await f.db.query('UPDATE executions SET attestation_secret_sha256 = NULL WHERE id = $1', [x.executionId]);
  await t.throwsAsync(f.seal.attest({ agent_id: x.agentId, execution_id: x.executionId, container_id: `process-${x.executionId}`, public_key: key() }), { message: /refused/ });
});

test('a docker sandbox is still proven by the engine-made container id', async (t) => {
  const x = await f.newExecution();
  const docker = 'a'.repeat(64);
  await f.db.query('UPDATE executions SET container_id = $2, attestation_secret_sha256 = NULL WHERE id = $1', [x.executionId, docker]);
  t.truthy((await f.seal.attest({ agent_id: x.agentId, execution_id: x.executionId, container_id: docker, public_key: key() })).security_token);
  await t.throwsAsync(f.seal.attest({ agent_id: x.agentId, execution_id: x.executionId, container_id: 'b'.repeat(64), public_key: key() }), { message: /refused/ });
});

test('invalid and small-order Ed25519 keys are refused in both forms (400, before any session)', async (t) => {
  const x = await f.newExecution();
  const attest = (public_key: string) => f.seal.attest({ agent_id: x.agentId, execution_id: x.executionId, container_id: x.containerId, public_key });
  const spki = (raw: Buffer) => createPublicKey({ key: Buffer.concat([Buffer.from('302a300506032b6570032100', 'hex'), raw]), format: 'der', type: 'spki' }).export({ format: 'pem', type: 'spki' }).toString();
  const identity = Buffer.alloc(32);
  identity[0] = 1;
  // y = 2^255 - 20 (p - 1): the point (0, -1), of order 2.
  const orderTwo = Buffer.alloc(32, 0xff);
  orderTwo[0] = 0xec;
  orderTwo[31] = 0x7f;
  const bad = { 'all zero': Buffer.alloc(32), identity, 'order two': orderTwo };
  for (const [what, raw] of Object.entries(bad)) {
    for (const [form, text] of [['base64', raw.toString('base64')], ['PEM', spki(raw)]] as const) {
      const err = await t.throwsAsync(attest(text), undefined, `${what} (${form})`);
      t.regex(err?.message ?? '', /not a valid Ed25519 key/, `${what} (${form})`);
      t.is((err as { spec?: { http: number } } | undefined)?.spec?.http, 400, `${what} (${form})`);
    }
  }
  const sessions = (await f.db.query<{ n: string }>('SELECT count(*)::TEXT AS n FROM seal_sessions WHERE execution_id = $1', [x.executionId])).rows[0]?.n;
  t.is(sessions, '0');
  // A real key in either form still attests.
  t.truthy((await attest(publicKeyPem(generateKeyPair().publicKey))).security_token);
});
