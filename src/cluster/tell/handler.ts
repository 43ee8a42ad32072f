// TellActor (docs/CLUSTER.md "Messages to actors"): another node wakes an actor this node holds. Same rules as every
// token-protected call (node token in metadata and envelope, Ed25519 signature, fresh stamp, unused nonce). Any node
// token may wake: the message carries no fact, the woken actor re-reads its row (a cancel is obeyed only when the
// row's cancel_requested is set), so a replayed, late or forged-but-authenticated message changes nothing.
import type { ServerUnaryCall, sendUnaryData } from '@grpc/grpc-js';
import { Errors, OrchError } from '../../errors/catalog.ts';
import type { Logger } from '../../logging/logger.ts';
import { TellActorRequest, type NodeClusterServiceServer, type SealNodeEnvelope, type TellActorResponse } from '../../gen/orch/cluster/v1/cluster.js';
import type { TellKind, TellMessage } from '../../actors/tell.ts';
import type { ClusterAuthority } from '../authority.ts';
import { holderOf, type ActorPost } from './post.ts';
import type { Queryable } from '../../storage/db.ts';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const TOPIC = /^(terminal|execution):[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** The request as a (kind, key, message), or a 400 naming what is wrong. */
export function parseTell(req: TellActorRequest): { kind: TellKind; key: string; msg: TellMessage } {
  if (req.kind !== 'workflow' && req.kind !== 'execution') throw new OrchError(Errors.BAD_REQUEST, `unknown actor kind "${req.kind}" (workflow, execution)`);
  if (!UUID.test(req.key)) throw new OrchError(Errors.BAD_REQUEST, 'key must be a UUID');
  if (req.message === 'cancel') {
    if (req.topic !== '') throw new OrchError(Errors.BAD_REQUEST, 'a cancel has no topic');
    return { kind: req.kind, key: req.key, msg: { type: 'cancel' } };
  }
  if (req.message !== 'wake') throw new OrchError(Errors.BAD_REQUEST, `unknown message "${req.message}" (wake, cancel)`);
  if (req.topic !== '' && !TOPIC.test(req.topic)) throw new OrchError(Errors.BAD_REQUEST, 'topic must be empty, terminal:<uuid> or execution:<uuid>');
  return { kind: req.kind, key: req.key, msg: req.topic ? { type: 'wake', topic: req.topic } : { type: 'wake' } };
}

export function tellActorHandler(d: { authority: ClusterAuthority; post: ActorPost; db: Queryable; logger: Logger }): Partial<NodeClusterServiceServer> {
  return {
    tellActor: async (call: ServerUnaryCall<SealNodeEnvelope, TellActorResponse>, callback: sendUnaryData<TellActorResponse>): Promise<void> => {
      const { payload } = await d.authority.verifyEnvelope(call.metadata, call.request);
      let req: TellActorRequest;
      try {
        req = TellActorRequest.decode(payload);
      } catch {
        throw new OrchError(Errors.BAD_REQUEST, 'envelope payload is not a TellActorRequest');
      }
      const { kind, key, msg } = parseTell(req);
      if (await d.post.receive(kind, key, msg)) {
        callback(null, { delivered: true, holder_node_id: '' });
        return;
      }
      // Not here: say who holds it now, so the sender can tell whether the lease moved.
      const holder = await holderOf(d.db, kind, key);
      callback(null, { delivered: false, holder_node_id: holder.nodeId ?? '' });
    },
  };
}
