// `orch volume create|ls|rename|rm|quota` and `orch volume files ls|get|put|mkdir|mv|rm` over /v1/volumes (docs/VOLUMES.md). Sizes
// take a unit (512K, 10M, 2G, binary multiples) or plain bytes; `get` writes to a file or stdout, `put` reads a
// file or stdin (`-`).
import { createWriteStream } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { Command } from 'commander';
import { ApiClient } from './client.ts';
import { CliError, printJson, printTable } from './output.ts';

interface GlobalOpts {
  json?: boolean;
  url?: string;
  token?: string;
}

const UNITS: Record<string, number> = { '': 1, B: 1, K: 1024, KB: 1024, KIB: 1024, M: 1024 ** 2, MB: 1024 ** 2, MIB: 1024 ** 2, G: 1024 ** 3, GB: 1024 ** 3, GIB: 1024 ** 3, T: 1024 ** 4, TB: 1024 ** 4, TIB: 1024 ** 4 };

/** "10M" → 10485760; plain digits are bytes. */
export function parseSize(text: string): number {
  const m = /^\s*(\d+(?:\.\d+)?)\s*([A-Za-z]*)\s*$/.exec(text);
  const unit = m ? UNITS[m[2]!.toUpperCase()] : undefined;
  if (!m || unit === undefined) throw new CliError(`invalid size "${text}": use bytes or a unit such as 512K, 10M, 2G`);
  const n = Math.floor(Number(m[1]) * unit);
  if (!Number.isSafeInteger(n) || n <= 0) throw new CliError(`invalid size "${text}": must be positive`);
  return n;
}

function human(bytes: unknown): string {
  const n = Number(bytes);
  if (!Number.isFinite(n)) return String(bytes);
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let v = n;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i += 1;
  }
  return i === 0 ? `${n} B` : `${v.toFixed(1)} ${units[i]}`;
}

async function readStdin(): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of process.stdin) chunks.push(Buffer.from(c as Uint8Array));
  return Buffer.concat(chunks);
}

const enc = encodeURIComponent;

export function registerVolumeCommands(program: Command): void {
  const volume = program.command('volume').description('volumes: create, list, delete, quota, and their files');
  const g = (): GlobalOpts => program.opts<GlobalOpts>();
  const client = (): ApiClient => new ApiClient(g(), process.env);

  volume
    .command('create')
    .description('create a volume')
    .argument('<label>', 'a name for people')
    .requiredOption('--size <size>', 'size limit: bytes, or with a unit (512K, 10M, 2G)')
    .option('--ephemeral', 'expire after --ttl-hours (default 24); otherwise persistent until deleted')
    .option('--ttl-hours <hours>', 'lifetime of an ephemeral volume', (v) => Number.parseInt(v, 10))
    .action(async (label: string, opts: { size: string; ephemeral?: boolean; ttlHours?: number }) => {
      if (opts.ttlHours !== undefined && !opts.ephemeral) throw new CliError('--ttl-hours needs --ephemeral');
      if (opts.ttlHours !== undefined && !(opts.ttlHours > 0)) throw new CliError('--ttl-hours must be a positive integer');
      const v = await client().request<Record<string, unknown>>('POST', '/v1/volumes', {
        label,
        size_limit_bytes: parseSize(opts.size),
        storage_class: opts.ephemeral ? 'ephemeral' : 'persistent',
        ...(opts.ttlHours !== undefined ? { ttl_hours: opts.ttlHours } : {}),
      });
      if (g().json) printJson(v);
      else process.stdout.write(`created volume ${String(v.label)} (${String(v.id)}), ${human(v.size_limit_bytes)}, ${String(v.storage_class)}${v.expires_at ? `, expires ${String(v.expires_at)}` : ''}\n`);
    });

  volume
    .command('ls')
    .description("list the tenant's volumes")
    .action(async () => {
      const res = await client().request<{ volumes: Record<string, unknown>[] }>('GET', '/v1/volumes?limit=1000');
      if (g().json) printJson(res);
      else printTable(res.volumes.map((v) => ({ ...v, used: human(v.used_bytes), limit: human(v.size_limit_bytes) })), ['id', 'label', 'storage_class', 'used', 'limit', 'expires_at']);
    });

  volume
    .command('rm')
    .description('delete a volume and everything in it')
    .argument('<id>')
    .action(async (id: string) => {
      const res = await client().request<Record<string, unknown>>('DELETE', `/v1/volumes/${enc(id)}`);
      if (g().json) printJson(res);
      else process.stdout.write(`deleted volume ${id}\n`);
    });

  volume
    .command('rename')
    .description('give a volume a new label')
    .argument('<id>')
    .argument('<label>')
    .action(async (id: string, label: string) => {
      const v = await client().request<Record<string, unknown>>('PATCH', `/v1/volumes/${enc(id)}`, { label });
      if (g().json) printJson(v);
      else process.stdout.write(`renamed volume ${id} to ${String(v.label)}\n`);
    });

  volume
    .command('quota')
    .description('size limit, used bytes and file count of a volume')
    .argument('<id>')
    .action(async (id: string) => {
      const q = await client().request<Record<string, unknown>>('GET', `/v1/volumes/${enc(id)}/quota`);
      if (g().json) printJson(q);
      else {
        process.stdout.write(
          `used ${human(q.used_bytes)} of ${human(q.size_limit_bytes)} (${String(q.used_bytes)} / ${String(q.size_limit_bytes)} bytes), ${human(q.available_bytes)} free, ${String(q.file_count)} file(s), ${String(q.directory_count)} director${q.directory_count === 1 ? 'y' : 'ies'}\n`,
        );
      }
    });

  const files = volume.command('files').description('files of a volume');

  files
    .command('ls')
    .description('list a directory of a volume')
    .argument('<id>')
    .argument('[path]', 'directory inside the volume', '/')
    .action(async (id: string, p: string) => {
      const res = await client().request<{ path: string; entries: Record<string, unknown>[] }>('GET', `/v1/volumes/${enc(id)}/files?path=${enc(p)}`);
      if (g().json) printJson(res);
      else printTable(res.entries.map((e) => ({ ...e, name: e.type === 'directory' ? `${String(e.name)}/` : e.name })), ['name', 'type', 'size', 'mtime']);
    });

  files
    .command('get')
    .description('download a file (to stdout unless -o)')
    .argument('<id>')
    .argument('<path>', 'file inside the volume')
    .option('-o, --output <file>', 'write to this file')
    .action(async (id: string, p: string, opts: { output?: string }) => {
      const res = await client().raw('GET', `/v1/volumes/${enc(id)}/files/content?path=${enc(p)}`);
      if (!res.body) throw new CliError('the download has no body');
      const body = Readable.fromWeb(res.body as import('node:stream/web').ReadableStream<Uint8Array>);
      if (opts.output) {
        await pipeline(body, createWriteStream(opts.output));
        if (!g().json) process.stderr.write(`saved ${p} to ${opts.output}\n`);
      } else {
        await pipeline(body, process.stdout, { end: false });
      }
    });

  files
    .command('put')
    .description('upload a file (from stdin with -)')
    .argument('<id>')
    .argument('<path>', 'destination inside the volume')
    .argument('<file>', 'local file, or - for stdin')
    .action(async (id: string, p: string, file: string) => {
      const data =
        file === '-'
          ? await readStdin()
          : await readFile(file).catch((err: Error) => {
              throw new CliError(`cannot read ${file}: ${err.message}`);
            });
      const res = await client().upload<Record<string, unknown>>('PUT', `/v1/volumes/${enc(id)}/files/content?path=${enc(p)}`, data);
      if (g().json) printJson(res);
      else process.stdout.write(`wrote ${String(res.bytes_written)} bytes to ${String(res.path)} (volume uses ${human(res.used_bytes)})\n`);
    });

  files
    .command('mkdir')
    .description('make a directory (and its parents)')
    .argument('<id>')
    .argument('<path>')
    .action(async (id: string, p: string) => {
      const res = await client().request<Record<string, unknown>>('POST', `/v1/volumes/${enc(id)}/files/mkdir`, { path: p });
      if (g().json) printJson(res);
      else process.stdout.write(`made ${String(res.path)}\n`);
    });

  files
    .command('mv')
    .description('move or rename a file or directory')
    .argument('<id>')
    .argument('<from>')
    .argument('<to>')
    .option('--overwrite', 'replace an existing file at <to>')
    .action(async (id: string, from: string, to: string, opts: { overwrite?: boolean }) => {
      const res = await client().request<Record<string, unknown>>('POST', `/v1/volumes/${enc(id)}/files/move`, { from, to, overwrite: opts.overwrite === true });
      if (g().json) printJson(res);
      else process.stdout.write(`moved ${from} to ${String(res.path)}\n`);
    });

  files
    .command('rm')
    .description('delete a file, or a directory with -r')
    .argument('<id>')
    .argument('<path>')
    .option('-r, --recursive', 'delete a directory and everything in it')
    .action(async (id: string, p: string, opts: { recursive?: boolean }) => {
      const res = await client().request<Record<string, unknown>>('DELETE', `/v1/volumes/${enc(id)}/files?path=${enc(p)}&recursive=${opts.recursive === true}`);
      if (g().json) printJson(res);
      else process.stdout.write(`deleted ${String(res.path)} (${String(res.freed_bytes)} bytes freed)\n`);
    });
}
