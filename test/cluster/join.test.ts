// Issue 14 finding 5: anyone who reached the cluster port joined as a worker. The attack as written — AttestNode →
// ChallengeNode → RegisterNode advertising 8 GPUs, then visible in GET /v1/cluster/nodes — and a node token issued
// for the controller's own id. Now a controller admits only a node with a join credential (the join token in metadata
// `orch-join-token`, compared in constant time, or a key on spec.cluster.allowed_node_keys), admits nobody without
// either, and never hands out a controller's id. In process (real gRPC, real PostgreSQL) and against a real `orch up`.
import test from 'ava';
import { randomBytes } from 'node:crypto';
import { status } from '@grpc/grpc-js';
import { upsertSelf } from '../../src/actors/node-peer/repo.ts';
import { NodeClusterClient } from '../../src/cluster/client.ts';
import { generateNodeKey, type NodeKey } from '../../src/cluster/node-key.ts';
import { loadNodeConfig } from '../../src/config/load.ts';
import { NodeRole, type NodeCapabilityAdvertisement } from '../../src/gen/orch/cluster/v1/cluster.js';
import { TEST_JOIN_TOKEN } from '../support/node-process.ts';
import { attestNode, client, refused, startController, testDb } from './harness.ts';
import { nodeStarter, scratch } from './processes.ts';
import { api, type Api } from './support.ts';

const EIGHT_GPUS: NodeCapabilityAdvertisement = { gpu_count: 8, vram_gb: 640, cpu_cores: 128, available_memory_gb: 1024, supported_runtimes: ['process', 'docker'], tags: ['gpu'] };

/** The rogue's whole join: AttestNode (with `joinToken` if any) → ChallengeNode → RegisterNode with 8 GPUs. */
async function rogueJoin(c: NodeClusterClient, nodeId: string, o: { key?: NodeKey; joinToken?: string } = {}): Promise<string> {
  const key = o.key ?? generateNodeKey();
  const a = await c.attest({ node_id: nodeId, public_key_pem: key.publicKeyPem, role: NodeRole.WORKER }, o.joinToken);
  const ch = await c.challenge({ challenge_id: a.challenge_id, signature: Buffer.from(key.sign(Buffer.from(a.challenge_nonce, 'utf8'))) });
  return (await c.register({ capabilities: EIGHT_GPUS, grpc_address: '10.66.6.6:50056' }, { token: ch.node_security_token, key })).peer_id;
}

const rows = async (db: Awaited<ReturnType<typeof testDb>>, nodeId: string) => ({
  nodes: Number((await db.query<{ n: string }>('SELECT count(*)::TEXT AS n FROM cluster_nodes WHERE node_id = $1', [nodeId])).rows[0]?.n),
  challenges: Number((await db.query<{ n: string }>('SELECT count(*)::TEXT AS n FROM cluster_challenges WHERE node_id = $1', [nodeId])).rows[0]?.n),
});

test('the rogue join as written: no token and a wrong token are refused at AttestNode; nothing is written', async (t) => {
  const db = await testDb(t);
  const ctl = await startController(t, db);
  const c = client(t, ctl.address);
  const none = await refused(rogueJoin(c, 'rogue'));
  t.is(none.code, status.UNAUTHENTICATED);
  t.regex(none.details, /join token required/);
  for (const wrong of ['x', `${TEST_JOIN_TOKEN}x`, TEST_JOIN_TOKEN.slice(0, -1), TEST_JOIN_TOKEN.toUpperCase()]) {
    const err = await refused(rogueJoin(c, 'rogue', { joinToken: wrong }));
    t.is(err.code, status.UNAUTHENTICATED, wrong);
    t.regex(err.details, /wrong join token/);
  }
  t.deepEqual(await rows(db, 'rogue'), { nodes: 0, challenges: 0 });
});

test('a join with the right token works (the same steps, the 8 GPUs recorded)', async (t) => {
  const db = await testDb(t);
  const ctl = await startController(t, db);
  const peer = await rogueJoin(client(t, ctl.address), 'invited', { joinToken: TEST_JOIN_TOKEN });
  t.truthy(peer);
  const row = (await db.query<{ status: string; capabilities: { gpu_count: number } }>('SELECT status, capabilities FROM cluster_nodes WHERE node_id = $1', ['invited'])).rows[0];
  t.is(row?.status, 'ACTIVE');
  t.is(row?.capabilities.gpu_count, 8);
});

test('a controller with neither a join token nor a key list admits nobody, with a status that says why', async (t) => {
  const db = await testDb(t);
  const ctl = await startController(t, db, { join: {} });
  const err = await refused(rogueJoin(client(t, ctl.address), 'rogue', { joinToken: TEST_JOIN_TOKEN }));
  t.is(err.code, status.PERMISSION_DENIED);
  t.regex(err.details, /admits no remote nodes: configure spec\.cluster\.join_token/);
  t.deepEqual(await rows(db, 'rogue'), { nodes: 0, challenges: 0 });
});

test('allowed_node_keys: a listed key joins without the token; another key is refused', async (t) => {
  const db = await testDb(t);
  const listed = generateNodeKey();
  const ctl = await startController(t, db, { join: { allowedKeys: [Buffer.from(listed.publicKey).toString('base64')] } });
  const c = client(t, ctl.address);
  t.truthy(await rogueJoin(c, 'listed', { key: listed }));
  const err = await refused(rogueJoin(c, 'unlisted', { joinToken: TEST_JOIN_TOKEN }));
  t.is(err.code, status.PERMISSION_DENIED);
  t.regex(err.details, /allowed_node_keys/);
});

test("no node takes a controller's id: this controller's, another controller's row, a live member's with another key", async (t) => {
  const db = await testDb(t);
  const selfId = `ctl-${randomBytes(3).toString('hex')}`;
  const ctl = await startController(t, db, { selfId });
  const c = client(t, ctl.address);
  // Before this controller wrote its own row (the attack was made against a running controller: both cases).
  const own = await refused(rogueJoin(c, selfId, { joinToken: TEST_JOIN_TOKEN }));
  t.is(own.code, status.PERMISSION_DENIED);
  t.regex(own.details, /this controller's own/);
  // Another controller (and a hybrid) of the same database: their rows carry no member key.
  for (const [id, role] of [['ctl-other', 'controller'], ['hybrid-other', 'hybrid']] as const) {
    await upsertSelf(db, { nodeId: id, role, grpcAddress: '127.0.0.1:1', tags: [] });
    const err = await refused(rogueJoin(c, id, { joinToken: TEST_JOIN_TOKEN }));
    t.is(err.code, status.PERMISSION_DENIED, id);
    t.regex(err.details, /belongs to a controller/);
    // Even once it is marked DEREGISTERED: a controller comes back under its id.
    await db.query(`UPDATE cluster_nodes SET status = 'DEREGISTERED' WHERE node_id = $1`, [id]);
    t.is((await refused(rogueJoin(c, id, { joinToken: TEST_JOIN_TOKEN }))).code, status.PERMISSION_DENIED);
    t.is((await db.query<{ n: string }>(`SELECT count(*)::TEXT AS n FROM cluster_challenges WHERE node_id = $1`, [id])).rows[0]?.n, '0', 'no challenge, so no token');
  }
  // A live member's id with another key (the right join token does not change that).
  const member = await attestNode(t, ctl.address);
  const err = await refused(rogueJoin(c, member.nodeId, { joinToken: TEST_JOIN_TOKEN }));
  t.is(err.code, status.PERMISSION_DENIED);
  t.regex(err.details, /member with another key/);
});

test('a small-order (all-zero) node key is refused at AttestNode', async (t) => {
  const db = await testDb(t);
  const ctl = await startController(t, db);
  const zeroPem = `-----BEGIN PUBLIC KEY-----\n${Buffer.concat([Buffer.from('302a300506032b6570032100', 'hex'), Buffer.alloc(32)]).toString('base64')}\n-----END PUBLIC KEY-----\n`;
  const err = await refused(client(t, ctl.address).attest({ node_id: 'zero', public_key_pem: zeroPem, role: NodeRole.WORKER }, TEST_JOIN_TOKEN));
  t.is(err.code, status.INVALID_ARGUMENT);
  t.regex(err.details, /not a valid Ed25519 public key/);
});

test('NodeConfig: join_token only from the environment; allowed_node_keys checked', (t) => {
  const head = 'apiVersion: orch.dev/v1\nkind: NodeConfig\nmetadata: { name: c }\nspec:\n  node: { id: c, role: controller }\n';
  const load = (cluster: string, env: Record<string, string> = {}) => loadNodeConfig({ text: `${head}  cluster: ${cluster}\n`, env, cwd: '/srv', hostname: 'box' });
  t.throws(() => load(`{ join_token: "${TEST_JOIN_TOKEN}" }`), { message: /spec\.cluster\.join_token.*env:NAME/ });
  t.is(load('{ join_token: env:JOIN }', { JOIN: TEST_JOIN_TOKEN }).cluster.join_token, TEST_JOIN_TOKEN);
  t.is(load('{ join_token: env:JOIN }').cluster.join_token, undefined, 'an unset variable leaves the controller without a token');
  t.throws(() => load('{ join_token: env:JOIN }', { JOIN: 'short' }), { message: /16/ });
  t.is(load('{}', { ORCH_CLUSTER_JOIN_TOKEN: TEST_JOIN_TOKEN }).cluster.join_token, TEST_JOIN_TOKEN);
  const key = generateNodeKey();
  const b64 = Buffer.from(key.publicKey).toString('base64');
  t.deepEqual(load(`{ allowed_node_keys: ["${b64}"] }`).cluster.allowed_node_keys, [b64]);
  t.deepEqual(load(`{ allowed_node_keys: [${JSON.stringify(key.publicKeyPem)}] }`).cluster.allowed_node_keys, [b64]);
  t.throws(() => load(`{ allowed_node_keys: ["${Buffer.alloc(32).toString('base64')}"] }`), { message: /allowed_node_keys\[0\].*small order/ });
  t.throws(() => load('{ allowed_node_keys: ["nope"] }'), { message: /allowed_node_keys\[0\]/ });
});

test('against a real controller (orch up): the rogue is refused and never listed; a node with the token joins; its own id is refused', async (t) => {
  t.timeout(300_000);
  const s = await scratch(t, 'orch-join-');
  const start = nodeStarter(t, s);
  const sfx = randomBytes(3).toString('hex');
  const ctlId = `ctl-${sfx}`;
  // Its token comes from startOrchNode's ORCH_CLUSTER_JOIN_TOKEN; the file has no join section at all.
  const ctl = await start(ctlId, `  node: { id: ${ctlId}, role: controller }\n  cluster: { heartbeat_interval_seconds: 1, missed_heartbeats: 1000 }\n`);
  const C: Api = { http: ctl.banner.http, token: ctl.banner.dev_token ?? '' };
  const c = client(t, ctl.banner.cluster!);
  const rogue = await refused(rogueJoin(c, `rogue-${sfx}`));
  t.is(rogue.code, status.UNAUTHENTICATED);
  const own = await refused(rogueJoin(c, ctlId, { joinToken: TEST_JOIN_TOKEN }));
  t.is(own.code, status.PERMISSION_DENIED);
  t.truthy(await rogueJoin(c, `invited-${sfx}`, { joinToken: TEST_JOIN_TOKEN }));
  const nodes = (await api<{ nodes: { node_id: string; status: string }[] }>(C, 'GET', '/v1/cluster/nodes')).body.nodes;
  t.deepEqual(nodes.map((n) => n.node_id).sort(), [ctlId, `invited-${sfx}`].sort());
  // A controller started without any join credential refuses every join.
  const bareId = `bare-${sfx}`;
  const bare = await nodeStarter(t, s, { env: { ORCH_CLUSTER_JOIN_TOKEN: undefined } })(bareId, `  node: { id: ${bareId}, role: controller }\n`);
  const refusedAll = await refused(rogueJoin(client(t, bare.banner.cluster!), `rogue2-${sfx}`, { joinToken: TEST_JOIN_TOKEN }));
  t.is(refusedAll.code, status.PERMISSION_DENIED);
  t.regex(refusedAll.details, /admits no remote nodes/);
});
