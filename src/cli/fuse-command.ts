// `orch fuse-daemon`: the FUSE daemon of seed 000. It serves FuseMountService (Mount/Unmount) on 127.0.0.1:50053 and
// makes each mount a kernel FUSE filesystem whose operations are FsalService calls to the node's runtime gRPC port,
// authenticated with --token/ORCH_TOKEN (a service account token: each mount acts for its request's tenant through
// x-tenant-id). On SIGTERM/SIGINT it unmounts everything it mounted. See docs/FSAL.md.
import path from 'node:path';
import type { Command } from 'commander';
import { CliError } from './output.ts';

interface GlobalOpts {
  json?: boolean;
  token?: string;
}

function hostPort(value: string, what: string): { host: string; port: number } {
  const i = value.lastIndexOf(':');
  const port = Number(value.slice(i + 1));
  if (i <= 0 || !Number.isInteger(port) || port < 0 || port > 65535) throw new CliError(`${what} must be host:port, got ${value}`);
  return { host: value.slice(0, i), port };
}

export function registerFuseCommand(program: Command): void {
  program
    .command('fuse-daemon')
    .description('serve FuseMountService: per-volume FUSE mounts backed by FsalService (docs/FSAL.md)')
    .option('--listen <host:port>', 'FuseMountService address (default ORCH_FUSE_LISTEN or 127.0.0.1:50053)')
    .option('--fsal <host:port>', "the node's runtime gRPC address (default ORCH_FSAL_ADDRESS or 127.0.0.1:50051)")
    .option('--mount-prefix <dir>', 'parent directory of the mountpoints (default ORCH_FUSE_MOUNT_PREFIX or <ORCH_DATA_DIR>/fuse)')
    .option('--log-level <level>', 'pino log level', 'info')
    .action(async (opts: { listen?: string; fsal?: string; mountPrefix?: string; logLevel: string }) => {
      const g = program.opts<GlobalOpts>();
      // Loaded on use: other commands must not pay for the FUSE binding and the gRPC server.
      const [{ createLogger }, { fuseAvailable, fuseBindingName }, { MountManager }, { createFuseServer, DEFAULT_FUSE_DAEMON_ADDRESS }, { startGrpcServer }] = await Promise.all([
        import('../logging/logger.ts'),
        import('../fuse/binding.ts'),
        import('../fuse/mounts.ts'),
        import('../fuse/server.ts'),
        import('../gateway/grpc/start.ts'),
      ]);
      const listen = hostPort(opts.listen ?? process.env.ORCH_FUSE_LISTEN ?? DEFAULT_FUSE_DAEMON_ADDRESS, '--listen');
      const fsal = opts.fsal ?? process.env.ORCH_FSAL_ADDRESS ?? '127.0.0.1:50051';
      hostPort(fsal, '--fsal');
      const mountPrefix = path.resolve(opts.mountPrefix ?? process.env.ORCH_FUSE_MOUNT_PREFIX ?? path.join(process.env.ORCH_DATA_DIR ?? '.orch/data', 'fuse'));
      const token = g.token ?? process.env.ORCH_TOKEN;
      const logger = createLogger({ level: opts.logLevel, destination: 2 });
      if (!fuseAvailable()) logger.warn('the FUSE binding is not available: Mount will answer FAILED_PRECONDITION (run scripts/setup-fuse.sh, then npm install)');
      else {
        const b = fuseBindingName();
        logger.info({ binding: b.name, ...(b.why ? { binding_fallback: b.why } : {}) }, 'FUSE binding');
      }
      const mounts = new MountManager({ mountPrefix, fsal: { address: fsal, ...(token ? { token } : {}) }, logger });
      const server = await startGrpcServer(createFuseServer(mounts, logger), listen.host, listen.port);
      const address = `${listen.host}:${server.port}`;
      const banner = { status: 'started', fuse_daemon: address, fsal, mount_prefix: mountPrefix, fuse: fuseAvailable(), ...(fuseAvailable() ? { fuse_binding: fuseBindingName().name } : {}) };
      process.stdout.write(g.json ? `${JSON.stringify(banner)}\n` : `orch fuse-daemon on ${address} (FSAL ${fsal}, mounts under ${mountPrefix})\n`);
      const stop = (signal: string): void => {
        logger.info({ signal }, 'signal received; unmounting');
        mounts
          .closeAll()
          .then(() => server.close())
          .then(
            () => process.exit(0),
            (err: unknown) => {
              logger.error({ err }, 'shutdown failed');
              process.exit(1);
            },
          );
      };
      process.once('SIGTERM', () => stop('SIGTERM'));
      process.once('SIGINT', () => stop('SIGINT'));
    });
}
