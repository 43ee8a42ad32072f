// Helpers of the cluster tests: node configurations, a small HTTP client, an SSE reader and the multi-state
// System workflow the controller tests run.

export interface Api {
  http: string;
  token: string;
}

export async function api<T = Record<string, unknown>>(
  s: Api,
  method: string,
  url: string,
  body?: unknown,
  contentType = 'application/json',
): Promise<{ status: number; body: T }> {
  const headers: Record<string, string> = { authorization: `Bearer ${s.token}` };
  if (body !== undefined) headers['content-type'] = contentType;
  const res = await fetch(`${s.http}${url}`, {
    method,
    headers,
    ...(body !== undefined ? { body: typeof body === 'string' ? body : JSON.stringify(body) } : {}),
  });
  const text = await res.text();
  let parsed: unknown = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    // not JSON: keep the text
  }
  return { status: res.status, body: parsed as T };
}

export interface SseEvent {
  id: number;
  event: string;
  data: unknown;
}

/** Reads an SSE stream until the server ends it (or the time is up, which rejects). */
export async function readSse(url: string, token: string, timeoutMs: number): Promise<SseEvent[]> {
  const ctl = new AbortController();
  const timer = setTimeout(() => ctl.abort(), timeoutMs);
  try {
    const res = await fetch(url, { headers: { authorization: `Bearer ${token}` }, signal: ctl.signal });
    if (res.status !== 200 || !res.body) throw new Error(`stream answered ${res.status}: ${await res.text()}`);
    const events: SseEvent[] = [];
    let buf = '';
    const decoder = new TextDecoder();
    for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
      buf += decoder.decode(chunk, { stream: true });
      let idx: number;
      while ((idx = buf.indexOf('\n\n')) >= 0) {
        const block = buf.slice(0, idx);
        buf = buf.slice(idx + 2);
        const fields: Record<string, string> = {};
        for (const line of block.split('\n')) {
          if (line.startsWith(':')) continue;
          const c = line.indexOf(':');
          if (c > 0) fields[line.slice(0, c)] = line.slice(c + 1).trimStart();
        }
        if (fields.id !== undefined) events.push({ id: Number(fields.id), event: fields.event ?? '', data: JSON.parse(fields.data ?? 'null') });
      }
    }
    return events;
  } finally {
    clearTimeout(timer);
  }
}

/** NodeConfig of a controller with an identity provider's JWKS file and a short workflow lease. */
export function controllerConfig(o: { nodeId: string; jwksFile: string; issuer: string; audience: string; leaseSeconds: number; heartbeatSeconds?: number }): string {
  return `apiVersion: orch.dev/v1
kind: NodeConfig
metadata: { name: ${o.nodeId} }
spec:
  node: { id: ${o.nodeId}, role: controller }
  cluster: { heartbeat_interval_seconds: ${o.heartbeatSeconds ?? 1}, workflow_lease_seconds: ${o.leaseSeconds} }
  auth: { issuer: ${o.issuer}, audience: ${o.audience}, jwks_file: ${o.jwksFile} }
`;
}

/** States per run of workflowYaml. */
export const STATES = 12;

/**
 * STATES System states: odd ones run a short shell command (slow enough to be interrupted), even ones
 * `update_blackboard` with its output, so the blackboard records every step in order.
 */
export function workflowYaml(name: string, sleepSeconds = 0.3): string {
  const states: string[] = [];
  for (let i = 1; i <= STATES; i++) {
    const next = i < STATES ? `[{ condition: on_success, target: s${i + 1} }]` : '[]';
    const command =
      i % 2 === 1
        ? `'sleep ${sleepSeconds}; echo "v${i}-{{input.seed}}"'`
        : `'update_blackboard {"acc": "{{blackboard.acc}}{{trim s${i - 1}.output.stdout}};"}'`;
    states.push(`    s${i}:\n      kind: System\n      command: ${command}\n      transitions: ${next}\n`);
  }
  return `apiVersion: orch.dev/v1
kind: Workflow
metadata: { name: ${name}, version: 1.0.0 }
spec:
  initial_state: s1
  context: { acc: "" }
  states:
${states.join('')}`;
}

/** The final blackboard.acc of a workflowYaml run with input.seed = `seed`. */
export function expectedAcc(seed: string): string {
  let acc = '';
  for (let i = 1; i <= STATES; i += 2) acc += `v${i}-${seed};`;
  return acc;
}
