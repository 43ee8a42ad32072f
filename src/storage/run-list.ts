// One page of a tenant's runs, newest first: the list query the executions and the workflow runs share (agent and
// workflow routes, the dashboard, orch.*.list tools). Each table adds its own conditions (agent_id; workflow id or
// name) through `more`, which binds its values as parameters; status, the id-prefix range (id-prefix.ts) and the
// page are common.
import type { Queryable } from './db.ts';

/** Binds a value as the next positional parameter and returns its placeholder (`$3`). */
export type Bind = (value: unknown) => string;

export interface RunPage {
  status?: string | undefined;
  /** `id BETWEEN low AND high` (storage/id-prefix.ts): a prefix search on the primary key. */
  idRange?: { low: string; high: string } | undefined;
  limit: number;
  offset: number;
}

export async function listTenantRuns<R extends object>(
  db: Queryable,
  table: 'executions' | 'workflow_executions',
  tenantId: string,
  page: RunPage,
  more: (bind: Bind) => string[] = () => [],
): Promise<R[]> {
  const params: unknown[] = [tenantId];
  const bind: Bind = (value) => {
    params.push(value);
    return `$${params.length}`;
  };
  const where = ['tenant_id = $1', ...more(bind)];
  if (page.status) where.push(`status = ${bind(page.status)}`);
  if (page.idRange) where.push(`id BETWEEN ${bind(page.idRange.low)}::UUID AND ${bind(page.idRange.high)}::UUID`);
  const res = await db.query<R>(
    `SELECT * FROM ${table} WHERE ${where.join(' AND ')}
     ORDER BY created_at DESC, id LIMIT ${bind(page.limit)} OFFSET ${bind(page.offset)}`,
    params,
  );
  return res.rows;
}
