// RouteExecution (controller) and ForwardExecution (worker) handlers of NodeClusterService (docs/ROUTING.md). Both
// take a SealNodeEnvelope checked by ClusterAuthority.verifyEnvelope (node token + Ed25519 signature + replay) before
// anything else; they are merged into the handler objects of cluster-handlers.ts by the node.
import type { ServerUnaryCall, ServerWritableStream, sendUnaryData } from '@grpc/grpc-js';
import type { ActorRuntime } from '../../actors/runtime.ts';
import type { EventBus, Subscription } from '../../bus/bus.ts';
import { EXECUTION_KIND } from '../../agents/execution/actor.ts';
import { ExecutionHistory, executionStream, toProtoEvent, TERMINAL_EVENTS } from '../../agents/execution/events.ts';
import { getExecution, isTerminal } from '../../agents/execution/repo.ts';
import { Errors, OrchError } from '../../errors/catalog.ts';
import {
  ForwardExecutionRequest,
  RouteExecutionRequest,
  type NodeClusterServiceServer,
  type RouteExecutionResponse,
  type SealNodeEnvelope,
} from '../../gen/orch/cluster/v1/cluster.js';
import type { ExecutionEvent } from '../../gen/orch/runtime/v1/runtime.js';
import { toGrpcError } from '../../gateway/grpc/errors.ts';
import type { Logger } from '../../logging/logger.ts';
import type { Db } from '../../storage/db.ts';
import type { ClusterAuthority } from '../authority.ts';
import type { ExecutionRouter } from '../routing.ts';

function decode<T>(d: { decode(input: Uint8Array): T }, payload: Uint8Array, what: string): T {
  try {
    return d.decode(payload);
  } catch {
    throw new OrchError(Errors.BAD_REQUEST, `envelope payload is not a ${what}`);
  }
}

/** RouteExecution on a controller: the next worker in the rotation that meets `required`. */
export function routeExecutionHandler(d: { authority: ClusterAuthority; router: ExecutionRouter; logger: Logger }): Partial<NodeClusterServiceServer> {
  return {
    routeExecution: async (call: ServerUnaryCall<SealNodeEnvelope, RouteExecutionResponse>, callback: sendUnaryData<RouteExecutionResponse>): Promise<void> => {
      const { payload } = await d.authority.verifyEnvelope(call.metadata, call.request);
      const req = decode(RouteExecutionRequest, payload, 'RouteExecutionRequest');
      const decision = await d.router.route(req.required);
      callback(null, { target_node_id: decision.nodeId, worker_grpc_address: decision.grpcAddress });
    },
  };
}

export interface ForwardHandlerDeps {
  authority: ClusterAuthority;
  db: Db;
  bus: EventBus;
  actors: ActorRuntime;
  nodeId: string;
  /** A draining worker takes no new execution (it still streams the ones it runs). */
  isDraining: () => boolean;
  logger: Logger;
}

/**
 * ForwardExecution on a worker: the controller has handed the execution's row to this node (owner_node); its
 * ExecutionActor runs it here, and every event, from the first, streams back until the terminal one. Calling again
 * (a reconnect) streams from the start again; a cancelled call leaves the execution running.
 */
export function forwardExecutionHandler(d: ForwardHandlerDeps): Partial<NodeClusterServiceServer> {
  const history = new ExecutionHistory(d.db);
  return {
    forwardExecution: async (call: ServerWritableStream<SealNodeEnvelope, ExecutionEvent>): Promise<void> => {
      let sub: Subscription | undefined;
      let closed = false;
      const close = (): void => {
        closed = true;
        void sub?.close().catch(() => undefined);
      };
      call.on('cancelled', close);
      try {
        const { claims, payload } = await d.authority.verifyEnvelope(call.metadata, call.request);
        if (claims.role === 'worker') throw new OrchError(Errors.FORBIDDEN, 'only a controller may forward executions');
        const req = decode(ForwardExecutionRequest, payload, 'ForwardExecutionRequest');
        const row = await getExecution(d.db, req.execution_id);
        if (!row) throw new OrchError(Errors.NOT_FOUND, `execution ${req.execution_id} not found`);
        if (!isTerminal(row.status)) {
          if (row.owner_node !== d.nodeId) throw new OrchError(Errors.CONFLICT, `execution ${row.id} is assigned to ${row.owner_node ?? 'no node'}, not ${d.nodeId}`);
          if (d.isDraining() && !d.actors.isLive(EXECUTION_KIND, row.id)) throw new OrchError(Errors.UNAVAILABLE, `worker ${d.nodeId} is draining`);
          d.actors.spawn(EXECUTION_KIND, row.id);
          d.logger.info({ execution: row.id, from: claims.nodeId }, 'ForwardExecution');
        }
        const done = new Promise<void>((resolve, reject) => {
          call.on('cancelled', () => resolve());
          d.bus
            .subscribe(
              executionStream(row.id),
              (e) => {
                if (closed) return;
                call.write(toProtoEvent(e));
                if (TERMINAL_EVENTS.has(e.type)) {
                  closed = true;
                  resolve();
                }
              },
              { fromSeq: 1, history },
            )
            .then(
              (s) => {
                sub = s;
                if (closed) void s.close().catch(() => undefined);
              },
              // Reading history needs the database, which may be down: the call ends UNAVAILABLE and the controller
              // calls again (a reconnect streams from the start). Unhandled, this rejection killed the worker.
              (err: unknown) => reject(err),
            );
        });
        await done;
        await sub?.close();
        if (!call.cancelled) call.end();
      } catch (err) {
        close();
        // emit('error') sends the status (destroy(err) would leave the caller waiting for its deadline).
        if (!call.cancelled && !call.writableEnded && !call.destroyed) call.emit('error', toGrpcError(err));
      }
    },
  };
}
