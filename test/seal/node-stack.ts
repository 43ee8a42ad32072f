// An `orch up` node for the SEAL end-to-end tests: process isolation, the scripted LLM, the cmd dispatcher's
// timeout ceiling, and optionally Redis (then the SEAL replay record is a Redis SET NX and liveness comes from the
// Redis bus).
import { readdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { Started } from '../agents/execution-scenarios.ts';
import { eventually, startOrchNode } from '../support/node-process.ts';
import type { ScriptedLlm } from '../support/scripted-llm.ts';

export async function startSealNode(o: { dir: string; llm: ScriptedLlm; ceilingSecs: number; redisUrl?: string; cleanups: (() => unknown)[] }): Promise<Started> {
  const nodeId = `seal-${Math.random().toString(36).slice(2, 8)}`;
  const configFile = path.join(o.dir, 'node.yaml');
  await writeFile(
    configFile,
    `apiVersion: orch.dev/v1
kind: NodeConfig
metadata: { name: ${nodeId} }
spec:
  node: { id: ${nodeId}, role: hybrid }
  llm_providers:
    - { name: scripted, type: openai, endpoint: "${o.llm.url}", api_key: test-key, models: [ { alias: default, model: scripted-1 } ] }
  runtime: { default_isolation: process }
  builtin_dispatchers:
    - { name: cmd, config: { timeout_ceiling_secs: ${o.ceilingSecs} } }
`,
  );
  const nodeEnv = { ORCH_CONFIG: configFile, ORCH_DATA_DIR: path.join(o.dir, 'data'), DATABASE_URL: undefined, REDIS_URL: o.redisUrl, DOCKER_HOST: undefined };
  const node = await startOrchNode(nodeEnv);
  o.cleanups.push(() => node.child.kill('SIGKILL'));
  return { node, llm: o.llm, token: node.banner.dev_token ?? '', http: node.banner.http, configFile, nodeEnv };
}

/**
 * The container_id a process sandbox's agent code would send to AttestAgent: ORCH_SEAL_CONTAINER_ID from the sandbox's
 * own environment (the test stands in for code inside the sandbox; it reads /proc as root on the host). Under process
 * isolation the id shown by GET /v1/executions is not enough (docs/SEAL.md §1).
 */
export async function sandboxContainerId(executionId: string): Promise<string> {
  return eventually(async () => {
    for (const pid of await readdir('/proc')) {
      if (!/^\d+$/.test(pid)) continue;
      const environ = await readFile(`/proc/${pid}/environ`, 'utf8').catch(() => '');
      const vars = environ.split('\0');
      if (!vars.includes(`ORCH_EXECUTION_ID=${executionId}`)) continue;
      const proof = vars.find((v) => v.startsWith('ORCH_SEAL_CONTAINER_ID='));
      if (proof) return proof.slice('ORCH_SEAL_CONTAINER_ID='.length);
    }
    return undefined;
  }, 60_000, `the sandbox of ${executionId} with ORCH_SEAL_CONTAINER_ID`);
}

/** Host processes whose command line (what `ps` shows every user) contains `secret`: pid and the line. */
export async function secretOnCmdline(secret: string): Promise<string[]> {
  const found: string[] = [];
  for (const pid of await readdir('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    const cmdline = await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '');
    if (cmdline.includes(secret)) found.push(`${pid}: ${cmdline.replaceAll('\0', ' ').slice(0, 120)}`);
  }
  return found;
}
