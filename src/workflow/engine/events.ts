// The workflow event stream: one row per event in workflow_events (written in the same transaction as the row change
// it records, see writer.ts), announced on the bus as `workflow:<id>` after commit, served as SSE and as the log
// events of seed 000 (WorkflowExecutionStarted, WorkflowStateEntered, ... with sequence, state_name,
// iteration_number, recorded_at).
import type { BusEvent, HistorySource } from '../../bus/bus.ts';
import type { Queryable } from '../../storage/db.ts';

export type WorkflowEventType =
  | 'WorkflowExecutionStarted'
  | 'WorkflowStateEntered'
  | 'WorkflowStateCompleted'
  | 'WorkflowWaitingForHumanInput'
  | 'WorkflowHumanInputReceived'
  | 'WorkflowExecutionCompleted'
  | 'WorkflowExecutionFailed'
  | 'WorkflowExecutionCancelled';

export const TERMINAL_WORKFLOW_EVENTS: ReadonlySet<string> = new Set([
  'WorkflowExecutionCompleted',
  'WorkflowExecutionFailed',
  'WorkflowExecutionCancelled',
]);

/** The bus stream of one run's events, and the one every run's events are also announced on. */
export function workflowStream(executionId: string): string {
  return `workflow:${executionId}`;
}
export const ALL_WORKFLOWS_STREAM = 'workflows';

/** An event about to be written; `key` makes a repeated write a no-op. */
export interface NewWorkflowEvent {
  type: WorkflowEventType;
  key: string;
  state_name?: string | undefined;
  iteration_number?: number | undefined;
  payload: Record<string, unknown>;
}

export interface WorkflowEventPayload extends Record<string, unknown> {
  state_name: string | null;
  iteration_number: number | null;
}

interface EventRow {
  execution_id: string;
  seq: number;
  type: string;
  state_name: string | null;
  iteration_number: number | null;
  payload: Record<string, unknown>;
  recorded_at: Date;
}

export function toWorkflowBusEvent(row: EventRow): BusEvent<Record<string, unknown>> {
  return {
    stream: workflowStream(row.execution_id),
    seq: row.seq,
    type: row.type,
    payload: { ...row.payload, state_name: row.state_name, iteration_number: row.iteration_number },
    at: row.recorded_at.toISOString(),
  };
}

/** Inserts events with consecutive seqs from `firstSeq` (the caller holds the row's fence, so it is the only writer). */
export async function insertWorkflowEvents(
  tx: Queryable,
  rows: { executionId: string; firstSeq: number; events: NewWorkflowEvent[] }[],
): Promise<BusEvent<Record<string, unknown>>[]> {
  const values: string[] = [];
  const params: unknown[] = [];
  for (const r of rows) {
    r.events.forEach((e, i) => {
      const b = params.length;
      values.push(`($${b + 1}::UUID, $${b + 2}::INT4, $${b + 3}, $${b + 4}, $${b + 5}, $${b + 6}::INT4, $${b + 7}::JSONB, now())`);
      params.push(r.executionId, r.firstSeq + i, e.type, e.key, e.state_name ?? null, e.iteration_number ?? null, JSON.stringify(e.payload));
    });
  }
  if (values.length === 0) return [];
  const res = await tx.query<EventRow>(
    `INSERT INTO workflow_events (execution_id, seq, type, event_key, state_name, iteration_number, payload, recorded_at)
     VALUES ${values.join(', ')}
     ON CONFLICT DO NOTHING
     RETURNING execution_id, seq, type, state_name, iteration_number, payload, recorded_at`,
    params,
  );
  return res.rows.sort((a, b) => (a.execution_id === b.execution_id ? a.seq - b.seq : 0)).map(toWorkflowBusEvent);
}

export async function readWorkflowEvents(db: Queryable, executionId: string, fromSeq = 1, limit = 10_000): Promise<BusEvent<Record<string, unknown>>[]> {
  const res = await db.query<EventRow>(
    `SELECT execution_id, seq, type, state_name, iteration_number, payload, recorded_at FROM workflow_events
     WHERE execution_id = $1 AND seq >= $2 ORDER BY seq LIMIT $3`,
    [executionId, fromSeq, limit],
  );
  return res.rows.map(toWorkflowBusEvent);
}

export async function countWorkflowEvents(db: Queryable, executionId: string): Promise<number> {
  const res = await db.query<{ n: number }>('SELECT count(*)::INT4 AS n FROM workflow_events WHERE execution_id = $1', [executionId]);
  return res.rows[0]?.n ?? 0;
}

/** History for late bus subscribers of `workflow:<id>` streams. */
export class WorkflowHistory implements HistorySource {
  /** `recent`: the events of runs started in this process (recent-events.ts); `isLive`: the run is held here. */
  constructor(
    private readonly db: Queryable,
    private readonly recent?: { read(stream: string, fromSeq: number, limit: number, live: boolean): BusEvent[] | undefined },
    private readonly isLive: (id: string) => boolean = () => false,
  ) {}

  read(stream: string, fromSeq: number, limit: number): Promise<BusEvent[]> {
    const id = stream.startsWith('workflow:') ? stream.slice('workflow:'.length) : '';
    return readWorkflowEvents(this.db, id, fromSeq, limit);
  }

  /** A new subscriber's first page: from memory when this process has the run's whole stream, else the database. */
  async readStart(stream: string, fromSeq: number, limit: number): Promise<BusEvent[]> {
    const id = stream.startsWith('workflow:') ? stream.slice('workflow:'.length) : '';
    return this.recent?.read(stream, fromSeq, limit, this.isLive(id)) ?? readWorkflowEvents(this.db, id, fromSeq, limit);
  }
}
