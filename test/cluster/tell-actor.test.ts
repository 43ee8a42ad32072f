// TellActor and ActorPost in process over loopback gRPC and real PostgreSQL (issue 18; docs/CLUSTER.md "Messages to
// actors"): the RPC keeps the rules of every token-protected call (no token, a replayed envelope: UNAUTHENTICATED;
// a bad request: INVALID_ARGUMENT); a message follows the lease when the holder it names is unreachable and the row
// moves to another node; a row nobody holds is `unheld` (its next holder reads the fact), a terminal one `gone`.
import test, { type ExecutionContext } from 'ava';
import { randomUUID } from 'node:crypto';
import { Metadata, status } from '@grpc/grpc-js';
import net from 'node:net';
import { ClusterAuthority } from '../../src/cluster/authority.ts';
import { NodeClusterClient } from '../../src/cluster/client.ts';
import { sealPayload } from '../../src/cluster/envelope.ts';
import { createClusterServer } from '../../src/cluster/grpc/cluster-server.ts';
import { generateNodeKey } from '../../src/cluster/node-key.ts';
import { tellActorHandler } from '../../src/cluster/tell/handler.ts';
import { ActorPost } from '../../src/cluster/tell/post.ts';
import { startGrpcServer } from '../../src/gateway/grpc/start.ts';
import { TellActorRequest } from '../../src/gen/orch/cluster/v1/cluster.js';
import { silentLogger } from '../../src/logging/logger.ts';
import type { Db } from '../../src/storage/db.ts';
import { refused, testDb } from './harness.ts';

const logger = silentLogger();

/** A node: its post (deliveries recorded, held keys answered true) and its TellActor server. */
async function node(t: ExecutionContext, db: Db, id: string) {
  const authority = new ClusterAuthority({ db, logger, selfId: id });
  const key = generateNodeKey();
  const post = new ActorPost({
    db, nodeId: id, logger, credentials: () => authority.selfCredentials(id, 'controller', key),
    // Generous bounds: the takeover below is a timer and an UPDATE that a loaded machine can delay by seconds, and a
    // call that outlives callTimeoutMs is sent again (a wake is at-least-once: it only makes the holder re-read its
    // row, so a second copy is harmless). The tests count deliveries, so no call may time out on a slow machine.
    retryForMs: 20_000,
    callTimeoutMs: 20_000,
  });
  const held = new Set<string>();
  const got: string[] = [];
  post.register('workflow', async (k, msg) => {
    if (!held.has(k)) return false;
    got.push(`${k}:${msg.type}:${msg.type === 'wake' ? (msg.topic ?? '') : ''}`);
    return true;
  });
  const server = await startGrpcServer(createClusterServer({ logger, handlers: tellActorHandler({ authority, post, db, logger }) }), '127.0.0.1', 0, { shutdownTimeoutMs: 200 });
  t.teardown(async () => {
    post.close();
    await server.close();
  });
  const address = `127.0.0.1:${server.port}`;
  await db.query(`INSERT INTO cluster_nodes (node_id, role, status, grpc_address, tags, cluster_address) VALUES ($1, 'controller', 'ACTIVE', 'x:1', '[]', $2)`, [id, address]);
  return { id, authority, key, post, held, got, address };
}

async function insertRun(db: Db, owner: string | null, leaseMs: number, status = 'waiting_for_human_input'): Promise<string> {
  const id = randomUUID();
  await db.query(
    `INSERT INTO workflow_executions (id, tenant_id, workflow_id, workflow_name, workflow_version, manifest, input, status, blackboard, context, visits, ancestry, owner_node, lease_expires_at)
     VALUES ($1, 't', 'w', 'w', '1', '{}', '{}', $2, '{}', '{}', '{}', '[]', $3, now() + ($4::INT * INTERVAL '1 millisecond'))`,
    [id, status, owner, leaseMs],
  );
  return id;
}

/** A port nothing listens on. */
async function deadAddress(): Promise<string> {
  const srv = net.createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', () => r()));
  const port = (srv.address() as net.AddressInfo).port;
  await new Promise<void>((r) => srv.close(() => r()));
  return `127.0.0.1:${port}`;
}

test('TellActor: sealed and delivered; no token, a replay or a bad request are refused', async (t) => {
  const db = await testDb(t);
  const holder = await node(t, db, `ctl-h-${randomUUID().slice(0, 6)}`);
  const sender = await node(t, db, `ctl-s-${randomUUID().slice(0, 6)}`);
  const run = await insertRun(db, holder.id, 60_000);
  holder.held.add(run);
  t.is(await sender.post.tell('workflow', run, { type: 'wake' }), 'remote');
  const child = randomUUID();
  t.is(await sender.post.tell('workflow', run, { type: 'wake', topic: `terminal:${child}` }), 'remote');
  t.deepEqual(holder.got, [`${run}:wake:`, `${run}:wake:terminal:${child}`]);

  const client = new NodeClusterClient(holder.address);
  t.teardown(() => client.close());
  const creds = await sender.authority.selfCredentials(sender.id, 'controller', sender.key);
  const bytes = TellActorRequest.encode({ kind: 'workflow', key: run, message: 'wake', topic: '' }).finish();
  const env = sealPayload(bytes, creds);
  const bare = await refused(client.send('tellActor', env, new Metadata()));
  t.is(bare.code, status.UNAUTHENTICATED);
  const md = new Metadata();
  md.set('authorization', `Bearer ${creds.token}`);
  await client.send('tellActor', env, md);
  const replay = await refused(client.send('tellActor', env, md));
  t.is(replay.code, status.UNAUTHENTICATED);
  t.regex(replay.details, /replayed/);
  for (const bad of [
    { kind: 'approval', key: run, message: 'wake', topic: '' },
    { kind: 'workflow', key: 'not-a-uuid', message: 'wake', topic: '' },
    { kind: 'workflow', key: run, message: 'explode', topic: '' },
    { kind: 'workflow', key: run, message: 'wake', topic: 'anything' },
    { kind: 'workflow', key: run, message: 'cancel', topic: `terminal:${child}` },
  ]) {
    const e = await refused(client.tellActor(bad, creds));
    t.is(e.code, status.INVALID_ARGUMENT, JSON.stringify(bad));
  }
  t.is(holder.got.length, 3, 'only the sealed, well-formed messages were delivered');
});

test('a message follows the lease from an unreachable holder to the new one; unheld and gone rows are left to recovery', async (t) => {
  const db = await testDb(t);
  const sender = await node(t, db, `ctl-s-${randomUUID().slice(0, 6)}`);
  const next = await node(t, db, `ctl-n-${randomUUID().slice(0, 6)}`);
  const dead = `ctl-d-${randomUUID().slice(0, 6)}`;
  await db.query(`INSERT INTO cluster_nodes (node_id, role, status, grpc_address, tags, cluster_address) VALUES ($1, 'controller', 'ACTIVE', 'x:1', '[]', $2)`, [dead, await deadAddress()]);
  const run = await insertRun(db, dead, 60_000);
  next.held.add(run);
  // The dead holder's claim is taken over by `next` while the message is being retried.
  setTimeout(() => void db.query(`UPDATE workflow_executions SET owner_node = $2, epoch = epoch + 1 WHERE id = $1`, [run, next.id]).catch(() => undefined), 400);
  const t0 = Date.now();
  t.is(await sender.post.tell('workflow', run, { type: 'wake' }), 'remote');
  t.true(Date.now() - t0 >= 300, 'it was retried until the lease moved');
  t.deepEqual(next.got, [`${run}:wake:`], 'delivered once, to the new holder');

  const lapsed = await insertRun(db, next.id, -1000);
  t.is(await sender.post.tell('workflow', lapsed, { type: 'wake' }), 'unheld');
  const ended = await insertRun(db, next.id, 60_000, 'completed');
  t.is(await sender.post.tell('workflow', ended, { type: 'wake' }), 'gone');
  t.is(await sender.post.tell('workflow', randomUUID(), { type: 'wake' }), 'gone');
  t.is(next.got.length, 1);
});
