// Route schemas (TypeBox: one definition gives the JSON Schema fastify validates with, the OpenAPI schema and the
// TypeScript type) and the documented error answers of the seed routes of CONTRACT.md "HTTP routes the seeds leave
// open" (their 2xx answers are in response-schemas.ts with every other route's).
// Validation failures answer 400 in the usual error body naming the field (`querystring/limit must be string`).
// Integer query parameters stay strings in the schema: intParam (query-params.ts) reads them as decimal digits only
// (ajv's coercion would take `0x10` and `1e3` as numbers), and answers 400 naming the parameter and its range.
import { Type, type Static } from '@sinclair/typebox';
import { MAX_OFFSET } from './query-params.ts';

const intString = (description: string) => Type.String({ description: `${description}: decimal digits, 0 to ${MAX_OFFSET}` });

export const IdParams = Type.Object({ id: Type.String({ description: 'A UUID (agents also take a name)' }) });
export type IdParams = Static<typeof IdParams>;

export const NameParams = Type.Object({ name: Type.String({ description: 'The workflow name' }) });
export type NameParams = Static<typeof NameParams>;

export const PageQuery = Type.Object({
  limit: Type.Optional(intString('Page size (default 50, at most 200 for logs)')),
  offset: Type.Optional(intString('Rows to skip')),
});
export type PageQuery = Static<typeof PageQuery>;

export const ExecutionListQuery = Type.Object({
  agent_id: Type.Optional(Type.String({ description: 'Only executions of this agent' })),
  status: Type.Optional(Type.String({ description: 'pending, running, completed, failed or cancelled' })),
  id_prefix: Type.Optional(Type.String({ maxLength: 36, description: 'Only ids that start with this (e.g. the first 8 characters); an index range scan' })),
  limit: Type.Optional(intString('Page size')),
  offset: Type.Optional(intString('Rows to skip')),
});
export type ExecutionListQuery = Static<typeof ExecutionListQuery>;

export const WorkflowRunListQuery = Type.Object({
  workflow_id: Type.Optional(Type.String({ description: 'Only runs of this workflow (name or id)' })),
  status: Type.Optional(Type.String()),
  id_prefix: Type.Optional(Type.String({ maxLength: 36, description: 'Only run ids that start with this (e.g. the first 8 characters); an index range scan' })),
  limit: Type.Optional(intString('Page size')),
  offset: Type.Optional(intString('Rows to skip')),
});
export type WorkflowRunListQuery = Static<typeof WorkflowRunListQuery>;

/** The one error body of every failure (errors.ts). */
export const ERROR_SCHEMA = {
  type: 'object',
  required: ['error'],
  properties: {
    error: { type: 'string', description: 'What went wrong, naming the field for invalid input' },
    details: { description: 'Structured detail: the manifest `errors` of a 422, the `request_id` of a 500, …' },
  },
} as const;

const err = (description: string) => ({ description, ...ERROR_SCHEMA });

export interface SeedRouteDoc {
  /** Added to the route's OpenAPI operation (document only); the 2xx answers are in response-schemas.ts. */
  doc: Record<string, unknown> & { response: Record<string, unknown> };
}

/** The seed routes' documented error answers, keyed `METHOD /url/:pattern` (the test checks them against the node). */
export const SEED_ROUTE_DOCS: Record<string, SeedRouteDoc> = {
  'POST /v1/agents': {
    doc: { summary: 'Deploy an agent manifest', response: { 409: err('The name and version exist and force is not set'), 422: err('The manifest is invalid; details list the errors') } },
  },
  'GET /v1/executions': { doc: { summary: 'List executions', response: { 400: err('A bad filter or page parameter, named') } } },
  'POST /v1/executions': { doc: { summary: 'Start an execution', response: { 400: err('`Invalid agent ID` when agent_id is not a UUID; input missing or not a string'), 404: err('No such agent') } } },
  'GET /v1/executions/:id': { doc: { summary: 'An execution', response: { 404: err('No such execution') } } },
  'DELETE /v1/executions/:id': { doc: { summary: 'Remove a terminal execution', response: { 404: err('No such execution'), 409: err('Not terminal yet') } } },
  'POST /v1/workflows': {
    doc: { summary: 'Deploy a workflow manifest', response: { 409: err('The name and version exist and force is not set'), 422: err('The manifest is invalid; details list the errors') } },
  },
  'POST /v1/workflows/:name/run': { doc: { summary: 'Run a workflow', response: { 404: err('No such workflow'), 422: err('input fails the input_schema') } } },
  'GET /v1/workflows/executions/:id/logs': { doc: { summary: 'A run\'s events, paged', response: { 400: err('A bad page parameter, named'), 404: err('No such run') } } },
  'DELETE /v1/workflows/executions/:id': { doc: { summary: 'Remove a terminal run', response: { 404: err('No such run'), 409: err('Not terminal yet') } } },
};
