// Spot checks of the wire format against seed 000: field numbers read back from encoded bytes, enum values,
// explicit presence of `optional` fields, and the SealNodeEnvelope request type of the token-protected RPCs.
import test from 'ava';
import { BinaryReader, BinaryWriter, WireType } from '@bufbuild/protobuf/wire';
import {
  AttestNodeRequest,
  HeartbeatRequest,
  ListPeersRequest,
  NodeClusterServiceService,
  NodeCommand,
  NodePeerStatus,
  NodeRole,
  SealNodeEnvelope,
} from '../../src/gen/orch/cluster/v1/cluster.js';
import { FsalServiceService } from '../../src/gen/orch/fsal/v1/fsal.js';
import { MountRequest } from '../../src/gen/orch/fuse/v1/fuse.js';
import {
  AttestAgentRequest,
  ConsensusConfig,
  ConsensusConfig_Strategy,
  ExecutionEvent,
  InvokeToolRequest,
  StoreCortexPatternRequest,
} from '../../src/gen/orch/runtime/v1/runtime.js';

type Field = [number, string | number];

/** The top-level fields of an encoded message, in order: number and value (strings and bytes as UTF-8). */
function fields(bytes: Uint8Array): Field[] {
  const reader = new BinaryReader(bytes);
  const out: Field[] = [];
  while (reader.pos < reader.len) {
    const [no, wireType] = reader.tag();
    if (wireType === WireType.LengthDelimited) out.push([no, Buffer.from(reader.bytes()).toString('utf8')]);
    else if (wireType === WireType.Varint) out.push([no, reader.uint32()]);
    else if (wireType === WireType.Bit32) out.push([no, reader.float()]);
    else throw new Error(`unexpected wire type ${wireType} for field ${no}`);
  }
  return out;
}

test('StoreCortexPatternRequest: tags is field 7 and nothing is written as field 6', (t) => {
  const bytes = StoreCortexPatternRequest.encode({
    error_signature: 'sig',
    error_type: 'type',
    error_message: 'msg',
    solution_approach: 'approach',
    solution_code: 'code',
    tags: ['a', 'b'],
  }).finish();
  t.deepEqual(fields(bytes), [
    [1, 'sig'],
    [2, 'type'],
    [3, 'msg'],
    [4, 'approach'],
    [5, 'code'],
    [7, 'a'],
    [7, 'b'],
  ]);
  // A peer that (wrongly) sends field 6 is not mistaken for any known field.
  const withSix = new BinaryWriter().uint32((6 << 3) | WireType.LengthDelimited).string('x').finish();
  t.deepEqual(StoreCortexPatternRequest.decode(withSix), StoreCortexPatternRequest.fromPartial({}));
});

test('AttestAgentRequest fields 1-4', (t) => {
  const bytes = AttestAgentRequest.encode({
    agent_id: 'agent',
    execution_id: 'exec',
    container_id: 'ctr',
    public_key_pem: 'pem',
  }).finish();
  t.deepEqual(fields(bytes), [
    [1, 'agent'],
    [2, 'exec'],
    [3, 'ctr'],
    [4, 'pem'],
  ]);
});

test('InvokeToolRequest fields 1-5, payload as bytes', (t) => {
  const payload = Buffer.from('{"jsonrpc":"2.0"}');
  const bytes = InvokeToolRequest.encode({
    protocol: 'seal/v1',
    security_token: 'tok',
    signature: 'sig',
    payload,
    timestamp: '2025-01-01T00:00:00Z',
  }).finish();
  t.deepEqual(fields(bytes), [
    [1, 'seal/v1'],
    [2, 'tok'],
    [3, 'sig'],
    [4, '{"jsonrpc":"2.0"}'],
    [5, '2025-01-01T00:00:00Z'],
  ]);
});

test('ExecutionEvent oneof numbers: iteration_completed is 4, execution_failed is 8', (t) => {
  const completed = ExecutionEvent.encode({
    event: {
      $case: 'iteration_completed',
      value: { execution_id: 'e', iteration_number: 2, output: 'out', completed_at: 'now', tool_calls: [] },
    },
  }).finish();
  const [outer] = fields(completed);
  t.is(outer?.[0], 4);
  const inner = new BinaryReader(completed);
  inner.tag();
  t.deepEqual(fields(inner.bytes()), [
    [1, 'e'],
    [2, 2],
    [3, 'out'],
    [4, 'now'],
  ]);
  const failed = ExecutionEvent.encode({
    event: { $case: 'execution_failed', value: { execution_id: 'e', reason: 'r', total_iterations: 1, failed_at: 'now' } },
  }).finish();
  t.is(fields(failed)[0]?.[0], 8);
});

test('enums have the seed values', (t) => {
  t.deepEqual([NodeRole.CONTROLLER, NodeRole.WORKER, NodeRole.HYBRID], [0, 1, 2]);
  t.deepEqual([NodePeerStatus.ACTIVE, NodePeerStatus.DRAINING, NodePeerStatus.UNHEALTHY], [0, 1, 2]);
  t.deepEqual(
    [
      ConsensusConfig_Strategy.WEIGHTED_AVERAGE,
      ConsensusConfig_Strategy.MAJORITY_VOTE,
      ConsensusConfig_Strategy.UNANIMOUS,
      ConsensusConfig_Strategy.ANY_APPROVED,
    ],
    [0, 1, 2, 3],
  );
});

test('optional fields have explicit presence: a zero value set is written, an absent one is not', (t) => {
  t.deepEqual(fields(ListPeersRequest.encode({ filter_status: NodePeerStatus.ACTIVE }).finish()), [[1, 0]]);
  t.deepEqual(fields(ListPeersRequest.encode({}).finish()), []);
  t.is(ListPeersRequest.decode(new Uint8Array()).filter_status, undefined);
  t.deepEqual(fields(ConsensusConfig.encode({ strategy: ConsensusConfig_Strategy.UNANIMOUS, n: 0 }).finish()), [
    [1, 2],
    [4, 0],
  ]);
});

test('cluster messages: SealNodeEnvelope 1-3, AttestNodeRequest role 3, HeartbeatRequest status 5, NodeCommand sync_config 3', (t) => {
  const envelope = SealNodeEnvelope.encode({
    node_security_token: 'jwt',
    signature: Buffer.from('sig'),
    payload: Buffer.from('body'),
  }).finish();
  t.deepEqual(fields(envelope), [
    [1, 'jwt'],
    [2, 'sig'],
    [3, 'body'],
  ]);
  t.deepEqual(fields(AttestNodeRequest.encode({ node_id: 'n', public_key_pem: 'p', role: NodeRole.HYBRID }).finish()), [
    [1, 'n'],
    [2, 'p'],
    [3, 2],
  ]);
  const heartbeat = HeartbeatRequest.encode({
    peer_id: 'peer',
    active_execution_count: 3,
    cpu_utilization_percent: 0.5,
    memory_utilization_percent: 0.25,
    status: NodePeerStatus.DRAINING,
  }).finish();
  t.deepEqual(fields(heartbeat), [
    [1, 'peer'],
    [2, 3],
    [3, 0.5],
    [4, 0.25],
    [5, 1],
  ]);
  const command = NodeCommand.encode({ command: { $case: 'sync_config', value: { config_hash: 'h' } } }).finish();
  t.is(fields(command)[0]?.[0], 3);
});

test('token-protected cluster RPCs take a SealNodeEnvelope; AttestNode and ChallengeNode take their own requests', (t) => {
  const envelope: SealNodeEnvelope = { node_security_token: 't', signature: Buffer.from('s'), payload: Buffer.from('p') };
  const enveloped = Object.entries(NodeClusterServiceService)
    .filter(([, m]) => {
      // A method whose request type is SealNodeEnvelope round-trips an envelope unchanged.
      const decoded: unknown = m.requestDeserialize(Buffer.from(SealNodeEnvelope.encode(envelope).finish()));
      return JSON.stringify(decoded) === JSON.stringify(SealNodeEnvelope.decode(SealNodeEnvelope.encode(envelope).finish()));
    })
    .map(([name]) => name);
  t.deepEqual(enveloped.sort(), [
    'deregisterNode',
    'forwardExecution',
    'heartbeat',
    'listPeers',
    'pushConfig',
    'registerNode',
    'routeExecution',
    'syncConfig',
    'tellActor',
  ]);
});

test('every FsalService request carries execution_id (1) and volume_id (2)', (t) => {
  const bytes = Buffer.from(
    new BinaryWriter()
      .uint32((1 << 3) | WireType.LengthDelimited)
      .string('exec-1')
      .uint32((2 << 3) | WireType.LengthDelimited)
      .string('vol-1')
      .finish(),
  );
  for (const [name, method] of Object.entries(FsalServiceService)) {
    const request = method.requestDeserialize(bytes) as { execution_id?: unknown; volume_id?: unknown };
    t.is(request.execution_id, 'exec-1', name);
    t.is(request.volume_id, 'vol-1', name);
  }
});

test('MountRequest fields 1-3', (t) => {
  t.deepEqual(fields(MountRequest.encode({ execution_id: 'e', volume_id: 'v', tenant_id: 't' }).finish()), [
    [1, 'e'],
    [2, 'v'],
    [3, 't'],
  ]);
});
