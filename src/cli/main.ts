// The `orch` command. This is the edge: the only place that reads process.env and argv and decides exit codes.
import path from 'node:path';
import { Command, Option } from 'commander';
import { ConfigError } from '../config/errors.ts';
import type { NodeConfig, NodeRoleName } from '../config/types.ts';
import { ApiClient } from './client.ts';
import { CliError, printJson, printTable } from './output.ts';
import { registerAgentCommands } from './agent-commands.ts';
import { registerWorkflowCommands } from './workflow-commands.ts';
import { registerVolumeCommands } from './volume-commands.ts';
import { registerApprovalCommands, registerWorkflowRunCommands } from './workflow-run-commands.ts';
import { registerMcpCommand } from './mcp-command.ts';
import { registerFuseCommand } from './fuse-command.ts';
import { registerExecutionCommands } from './execution-commands.ts';
import { packageVersion } from './version.ts';
import { formatLoad } from './load.ts';

interface GlobalOpts {
  json?: boolean;
  url?: string;
  token?: string;
}

// The config's parser and validator, the dev identity (jose) and the logger (pino) are loaded by the commands that
// use them (up, token), not by every client command a script or test runs (issue 15 item 4: CLI start-up).
async function loadConfig(file: string | undefined, role?: string): Promise<NodeConfig> {
  const { loadNodeConfig } = await import('../config/load.ts');
  return loadNodeConfig({
    file: file ?? process.env.ORCH_CONFIG,
    env: process.env,
    overrides: role ? { role: role as NodeRoleName } : {},
  });
}

const program = new Command();
program
  .name('orch')
  .description('orch: run LLM agents and durable workflows, safely, on one laptop or many nodes')
  .addHelpText('after', '\nVersion:\n  orch --version | -V   print the version of orch')
  .option('--json', 'print JSON for scripts instead of tables')
  .option('--url <url>', 'orch HTTP address (default ORCH_URL or http://127.0.0.1:8080)')
  .option('--token <token>', 'bearer token (default ORCH_TOKEN)')
  .showHelpAfterError();

program
  .command('up')
  .description('start a node (hybrid by default: controller and worker in one process)')
  .option('-c, --config <file>', 'NodeConfig YAML file (default ORCH_CONFIG; none: built-in defaults)')
  .addOption(new Option('--role <role>', 'node role').choices(['hybrid', 'controller', 'worker']))
  .action(async (opts: { config?: string; role?: string }) => {
    const g = program.opts<GlobalOpts>();
    const config = await loadConfig(opts.config, opts.role);
    // PGlite's worker thread first (pglite-thread.ts): its start overlaps the loading of everything below.
    if (!config.database.url) (await import('../storage/pglite-thread.ts')).beginPgliteThread(path.join(config.dataDir, 'pglite'));
    const [{ createLogger }, { ensureDevIdentity }] = await Promise.all([import('../logging/logger.ts'), import('../auth/dev-identity.ts')]);
    const logger = createLogger({ level: config.log.level, destination: 2 });
    // Loaded here, not at the top: the client commands must not pay for loading the whole node (seconds of CPU).
    // The small modules first: the database and the authenticator begin (first-steps.ts) while the rest loads.
    const [{ beginFirstSteps }, { startTelemetry, telemetryOptionsFromEnv }, { installProcessGuard }] = await Promise.all([
      import('../node/first-steps.ts'),
      import('../observability/setup.ts'),
      import('../node/process-guard.ts'),
    ]);
    // An unhandled rejection or a dependency's stray 'error' event is logged and counted, not fatal (issue 20).
    installProcessGuard(logger);
    // Trace context always (trace ids in every request's log lines); spans exported over OTLP only when
    // OTEL_EXPORTER_OTLP_ENDPOINT (or ..._TRACES_ENDPOINT) is set. First, so the metrics get the same resource.
    const telemetry = startTelemetry(telemetryOptionsFromEnv(process.env, config.node.id));
    const first = beginFirstSteps(config, logger);
    const { startNode } = await import('../node/node.ts');
    const node = await startNode(config, logger, first);
    const banner: Record<string, unknown> = { status: 'started', node_id: config.node.id, role: config.node.role, ...node.addresses, database: node.db.kind, bus: node.bus.kind };
    if (!config.auth) {
      const dev = await ensureDevIdentity(config.dataDir);
      banner.dev_token = await dev.sign({ role: 'operator', serviceAccount: true });
    }
    if (g.json) {
      process.stdout.write(`${JSON.stringify(banner)}\n`);
    } else {
      const lines = [
        `orch node ${config.node.id} (${config.node.role}) is up`,
        `  HTTP          ${node.addresses.http}`,
        `  runtime gRPC  ${node.addresses.grpc}`,
        ...(node.addresses.cluster ? [`  cluster gRPC  ${node.addresses.cluster}`] : []),
        ...(node.addresses.health ? [`  liveness      ${node.addresses.health}`] : []),
        `  database      ${node.db.kind}${node.db.kind === 'pglite' ? ` (${config.dataDir}/pglite)` : ''}`,
        `  event bus     ${node.bus.kind}`,
      ];
      if (banner.dev_token) {
        lines.push(
          '',
          'Dev identity (operator service account, 12 h):',
          `  export ORCH_TOKEN=${String(banner.dev_token)}`,
          '',
          'Try:',
          `  curl -s ${node.addresses.http}/health`,
          `  curl -s -H "Authorization: Bearer $ORCH_TOKEN" ${node.addresses.http}/v1/cluster/nodes`,
          `  npx orch node ls --url ${node.addresses.http}`,
        );
      }
      process.stdout.write(`${lines.join('\n')}\n`);
    }
    // One graceful stop: the same signal often arrives twice (Ctrl-C reaches npm and the node, and npm forwards it
    // again), and a second one must not cut the shutdown short.
    let stopping = false;
    const stop = (signal: string): void => {
      if (stopping) {
        logger.info({ signal }, 'signal received; already shutting down');
        return;
      }
      stopping = true;
      logger.info({ signal }, 'signal received; shutting down gracefully');
      node.stop().then(() => telemetry?.shutdown()).then(
        () => process.exit(0),
        (err: unknown) => {
          logger.error({ err }, 'shutdown failed');
          process.exit(1);
        },
      );
    };
    // Not SIGHUP: a handler would undo `nohup` (which starts us with SIGHUP ignored); its default still ends the
    // process, and a node started by npm also stops when npm goes (bin/orch.js).
    for (const signal of ['SIGTERM', 'SIGINT'] as const) process.on(signal, () => stop(signal));
    // A worker told to shut down by its controller (ShutdownCommand) has deregistered; stop the process the same way.
    // never-rejects: shutdownRequested is only ever resolved.
    void node.shutdownRequested.then((reason) => stop(`shutdown command (${reason})`));
  });

program
  .command('token')
  .description('sign a bearer token with the dev identity of the data dir (dev identity mode only)')
  .option('-c, --config <file>', 'NodeConfig YAML file (for the data dir)')
  .option('--tenant <slug>', 'tenant the token belongs to')
  .addOption(new Option('--role <role>', 'role').choices(['operator', 'tenant-admin', 'user']).default('user'))
  .option('--service-account', 'a service account token (may delegate with X-Tenant-Id)')
  .option('--ttl <seconds>', 'lifetime in seconds', (v) => Number.parseInt(v, 10))
  .action(async (opts: { config?: string; tenant?: string; role: 'operator' | 'tenant-admin' | 'user'; serviceAccount?: boolean; ttl?: number }) => {
    const config = await loadConfig(opts.config);
    if (config.auth) throw new CliError('orch token works in dev identity mode only; this config names an identity provider (spec.auth)');
    if (opts.ttl !== undefined && !(opts.ttl > 0)) throw new CliError('--ttl must be a positive number of seconds');
    const { ensureDevIdentity } = await import('../auth/dev-identity.ts');
    const dev = await ensureDevIdentity(config.dataDir);
    const token = await dev.sign({
      ...(opts.tenant ? { tenant: opts.tenant } : {}),
      role: opts.role,
      serviceAccount: opts.serviceAccount === true,
      ...(opts.ttl ? { ttlSeconds: opts.ttl } : {}),
    });
    if (program.opts<GlobalOpts>().json) printJson({ token });
    else process.stdout.write(`${token}\n`);
  });

registerAgentCommands(program);
registerExecutionCommands(program);
registerWorkflowCommands(program);
registerVolumeCommands(program);
registerMcpCommand(program);
registerFuseCommand(program);

const node = program.command('node').description('cluster members');
node
  .command('ls')
  .description('list cluster nodes with role, status, load and last heartbeat')
  .option('--status <status>', 'only nodes with this status (ACTIVE, DRAINING, UNHEALTHY, DEREGISTERED)')
  .action(async (opts: { status?: string }) => {
    const g = program.opts<GlobalOpts>();
    const client = new ApiClient(g, process.env);
    const q = opts.status ? `?status=${encodeURIComponent(opts.status)}` : '';
    const res = await client.request<{ nodes: Record<string, unknown>[] }>('GET', `/v1/cluster/nodes${q}`);
    if (g.json) printJson(res);
    else printTable(res.nodes.map((n) => ({ ...n, load: formatLoad(n.load) })), ['node_id', 'role', 'status', 'grpc_address', 'load', 'last_heartbeat_at']);
  });
node
  .command('drain')
  .description('stop routing to a node and let its executions finish (operator only)')
  .argument('<id>', 'node id')
  .option('--reason <text>', 'why, shown in logs and node listings')
  .action(async (id: string, opts: { reason?: string }) => {
    const g = program.opts<GlobalOpts>();
    const client = new ApiClient(g, process.env);
    const res = await client.request<Record<string, unknown>>('POST', `/v1/cluster/nodes/${encodeURIComponent(id)}/drain`, opts.reason ? { reason: opts.reason } : {});
    if (g.json) printJson(res);
    else process.stdout.write(`node ${id} is ${String(res.status)}${res.already_draining ? ' (already draining)' : ''}\n`);
  });
node
  .command('undrain')
  .description('route new executions to a drained node again (operator only)')
  .argument('<id>', 'node id')
  .option('--reason <text>', 'why, shown in logs')
  .action(async (id: string, opts: { reason?: string }) => {
    const g = program.opts<GlobalOpts>();
    const client = new ApiClient(g, process.env);
    const res = await client.request<Record<string, unknown>>('POST', `/v1/cluster/nodes/${encodeURIComponent(id)}/undrain`, opts.reason ? { reason: opts.reason } : {});
    if (g.json) printJson(res);
    else process.stdout.write(`node ${id} is ${String(res.status)}${res.already_active ? ' (was not draining)' : ''}\n`);
  });

// After every other group: `orch workflow` may already exist (definition commands); the run commands join it.
registerWorkflowRunCommands(program);
registerApprovalCommands(program);

try {
  // `--version` is read only as the first argument, not through commander's .version(): program options are also
  // recognised after a subcommand, so `orch workflow get x --version 1.0.0` printed orch's version instead.
  const first = process.argv[2];
  if (first === '--version' || first === '-V') process.stdout.write(`${packageVersion()}\n`);
  else await program.parseAsync(process.argv);
} catch (err) {
  if (err instanceof ConfigError) {
    process.stderr.write(`orch: ${err.message}\n`);
    process.exit(2);
  }
  if (err instanceof CliError) {
    process.stderr.write(`orch: ${err.message}\n`);
    process.exit(err.exitCode);
  }
  const e = err as Error;
  process.stderr.write(`orch: ${e.message ?? String(err)}\n`);
  process.exit(1);
}
