// The FUSE daemon's side of FsalService: one client per mount, bound to its (execution, volume, tenant). Calls carry
// the daemon's bearer token and `x-tenant-id` (a service account acting for the mount's tenant), so the node's
// grpc_auth gate and the FSAL's ownership checks judge every kernel operation.
import { Metadata, credentials, status, type Client, type ClientDuplexStream, type MethodDefinition, type ServiceError } from '@grpc/grpc-js';
import {
  FsalServiceClient,
  type CreateResponse,
  type FileAttributes,
  type GetAttrResponse,
  type LookupResponse,
  type MkDirResponse,
  type ReadDirResponse,
  type ReadResponse,
  type WriteRequest,
  type WriteResponse,
} from '../gen/orch/fsal/v1/fsal.js';
import type { StatFsResponse } from '../gen/orch/fsal/v1/fsal_extension.js';
import { FLOW_CONTROL_WINDOW } from '../gateway/grpc/server-options.ts';
import { FSAL_DEFINITION as FsalServiceService, FSAL_EXTENSION_DEFINITION, writeHeaderRoom, writeRequestInPlace } from '../fsal/wire.ts';

export interface FsalTarget {
  execution_id: string;
  volume_id: string;
  tenant_id: string;
}

export interface FsalConnection {
  /** host:port of the runtime gRPC port (FsalService). */
  address: string;
  /** Bearer token; absent when the node runs without grpc_auth. */
  token?: string;
  /** Per-call deadline. */
  timeoutMs?: number;
}

/** A refused FSAL call: the gRPC status, and the errno the service named in trailing metadata `fsal-errno`. */
export class FsalCallError extends Error {
  constructor(
    readonly code: status,
    readonly details: string,
    readonly errno: string | undefined,
  ) {
    super(details);
    this.name = 'FsalCallError';
  }
}

const ERRNO_BY_STATUS: Partial<Record<status, string>> = {
  [status.NOT_FOUND]: 'ENOENT',
  [status.ALREADY_EXISTS]: 'EEXIST',
  [status.PERMISSION_DENIED]: 'EACCES',
  [status.UNAUTHENTICATED]: 'EACCES',
  [status.RESOURCE_EXHAUSTED]: 'ENOSPC',
  [status.INVALID_ARGUMENT]: 'EINVAL',
  [status.FAILED_PRECONDITION]: 'EPERM',
  [status.UNIMPLEMENTED]: 'ENOSYS',
  [status.DEADLINE_EXCEEDED]: 'ETIMEDOUT',
  [status.UNAVAILABLE]: 'EIO',
};

/** The errno for the kernel: the one the service named, else one by status. */
export function errnoFor(err: unknown): string {
  if (err instanceof FsalCallError) return err.errno ?? ERRNO_BY_STATUS[err.code] ?? 'EIO';
  const code = (err as { code?: unknown } | undefined)?.code;
  return typeof code === 'string' && /^E[A-Z]+$/.test(code) ? code : 'EIO';
}

/** A refusal as the FUSE daemon sees it, from a gRPC error and its trailing `fsal-errno`. */
function callError(err: ServiceError): FsalCallError {
  const errno = err.metadata?.get('fsal-errno')[0];
  return new FsalCallError(err.code, err.details, typeof errno === 'string' ? errno : undefined);
}

/**
 * The Writes of one path over one FsalExtensionService.WriteStream call (an orch extension beside FsalService): each
 * write() is sent at once and settles with its own answer, in order. The service applies them one after the other
 * and ends the call at the first refusal, so that refusal rejects the Write it belongs to and every Write sent after
 * it (which the service did not apply). A Write unanswered for the connection's timeout cancels the call
 * (ETIMEDOUT), as a unary call's deadline does.
 */
export class FsalWriteStream {
  private readonly pending: { resolve(res: WriteResponse): void; reject(err: unknown): void }[] = [];
  private failure: FsalCallError | undefined;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly call: ClientDuplexStream<WriteRequest | Buffer, WriteResponse>,
    private readonly timeoutMs: number,
  ) {
    call.on('data', (res: WriteResponse) => {
      this.pending.shift()?.resolve(res);
      this.arm();
    });
    call.on('error', (err: ServiceError) => this.fail(this.failure ?? callError(err)));
    // The call ended OK with Writes unanswered: not something the service does; they are not known to be written.
    call.on('status', () => this.fail(new FsalCallError(status.INTERNAL, 'the write stream ended before answering every Write', 'EIO')));
  }

  /** Whether a write() now would be sent (the call has not failed). */
  get open(): boolean {
    return this.failure === undefined;
  }

  /** A Write request, or one encoded already (writeRequestInPlace). */
  write(request: WriteRequest | Buffer): Promise<WriteResponse> {
    if (this.failure) return Promise.reject(this.failure);
    return new Promise((resolve, reject) => {
      this.pending.push({ resolve, reject });
      this.call.write(request);
      if (this.pending.length === 1) this.arm();
    });
  }

  /** Ends the call once every Write is answered (the caller waits for them first). */
  end(): void {
    if (this.failure === undefined) this.call.end();
    this.failure ??= new FsalCallError(status.CANCELLED, 'the write stream was ended', 'EIO');
    this.disarm();
  }

  private arm(): void {
    this.disarm();
    if (this.pending.length === 0 || this.failure) return;
    this.timer = setTimeout(() => {
      this.fail(new FsalCallError(status.DEADLINE_EXCEEDED, `a streamed Write was not answered in ${this.timeoutMs} ms`, 'ETIMEDOUT'));
      this.call.cancel();
    }, this.timeoutMs);
  }

  private disarm(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
  }

  private fail(err: FsalCallError): void {
    this.failure ??= err;
    this.disarm();
    for (const p of this.pending.splice(0)) p.reject(this.failure);
  }
}

export class FsalRemote {
  private readonly client: Client;
  private readonly timeoutMs: number;
  /** False once the node answered FsalExtensionService UNIMPLEMENTED (an older node): Writes go as unary calls. */
  streams = true;

  constructor(
    conn: FsalConnection,
    readonly target: FsalTarget,
  ) {
    this.client = new FsalServiceClient(conn.address, credentials.createInsecure(), {
      'grpc.max_receive_message_length': 64 * 1024 * 1024,
      'grpc.max_send_message_length': 64 * 1024 * 1024,
      // Reads of 1 MiB and more come back without waiting on HTTP/2's default 64 KiB window.
      'grpc-node.flow_control_window': FLOW_CONTROL_WINDOW,
    });
    this.timeoutMs = conn.timeoutMs ?? 10_000;
    this.metadata = new Metadata();
    if (conn.token) this.metadata.set('authorization', `Bearer ${conn.token}`);
    if (target.tenant_id) this.metadata.set('x-tenant-id', target.tenant_id);
  }

  private readonly metadata: Metadata;

  private call<Req, Res>(method: MethodDefinition<Req, Res>, request: Req): Promise<Res> {
    return new Promise((resolve, reject) => {
      this.client.makeUnaryRequest(
        method.path,
        method.requestSerialize,
        method.responseDeserialize,
        request,
        this.metadata,
        { deadline: Date.now() + this.timeoutMs },
        (err: ServiceError | null, value?: Res) => {
          if (err) reject(callError(err));
          else resolve(value as Res);
        },
      );
    });
  }

  private ids(path: string): { execution_id: string; volume_id: string; path: string } {
    return { execution_id: this.target.execution_id, volume_id: this.target.volume_id, path };
  }

  lookup(path: string): Promise<LookupResponse> {
    return this.call(FsalServiceService.lookup, this.ids(path));
  }

  async getAttr(path: string): Promise<FileAttributes> {
    const res: GetAttrResponse = await this.call(FsalServiceService.getAttr, this.ids(path));
    if (!res.attributes) throw new FsalCallError(status.INTERNAL, 'GetAttr answered no attributes', 'EIO');
    return res.attributes;
  }

  readDir(path: string, offset = 0, limit = 0): Promise<ReadDirResponse> {
    return this.call(FsalServiceService.readDir, { ...this.ids(path), offset, limit });
  }

  read(path: string, offset: number, length: number): Promise<ReadResponse> {
    return this.call(FsalServiceService.read, { ...this.ids(path), offset, length });
  }

  write(path: string, offset: number, data: Buffer): Promise<WriteResponse> {
    return this.call(FsalServiceService.write, { ...this.ids(path), offset, data });
  }

  /** A stream for the Writes of `path` (FsalWriteStream), sent in order over one call. */
  writeStream(): FsalWriteStream {
    const m = FSAL_EXTENSION_DEFINITION.writeStream;
    // Its serializer also takes a request encoded already (a Buffer, writeRequestInPlace).
    const serialize = m.requestSerialize as (value: WriteRequest | Buffer) => Buffer;
    return new FsalWriteStream(this.client.makeBidiStreamRequest(m.path, serialize, m.responseDeserialize, this.metadata, {}), this.timeoutMs);
  }

  /** The request of a Write of `path` (for writeStream's write()). */
  writeRequest(path: string, offset: number, data: Buffer): WriteRequest {
    return { ...this.ids(path), offset, data };
  }

  /** Bytes to keep before a Write's data for writeEncoded. */
  writeRoom(path: string): number {
    return writeHeaderRoom(this.ids(path));
  }

  /** The Write of `room[at, at + length)` at `offset` of `path`, encoded in place (the room before `at` is used). */
  writeEncoded(path: string, offset: number, room: Buffer, at: number, length: number): Buffer {
    return writeRequestInPlace({ ...this.ids(path), offset }, room, at, length);
  }

  /**
   * The volume's quota, usage and whether this mount's access is read-only (FsalExtensionService.StatFs); undefined
   * from a node that does not serve it (UNIMPLEMENTED).
   */
  async statFs(): Promise<StatFsResponse | undefined> {
    try {
      return await this.call(FSAL_EXTENSION_DEFINITION.statFs, { execution_id: this.target.execution_id, volume_id: this.target.volume_id });
    } catch (err) {
      if (err instanceof FsalCallError && err.code === status.UNIMPLEMENTED) return undefined;
      throw err;
    }
  }

  create(path: string, mode: number, exclusive: boolean): Promise<CreateResponse> {
    return this.call(FsalServiceService.create, { ...this.ids(path), mode, exclusive });
  }

  async remove(path: string): Promise<void> {
    await this.call(FsalServiceService.remove, this.ids(path));
  }

  async rename(path: string, newPath: string): Promise<void> {
    await this.call(FsalServiceService.rename, { ...this.ids(path), new_path: newPath });
  }

  mkDir(path: string, mode: number): Promise<MkDirResponse> {
    return this.call(FsalServiceService.mkDir, { ...this.ids(path), mode });
  }

  async rmDir(path: string): Promise<void> {
    await this.call(FsalServiceService.rmDir, this.ids(path));
  }

  close(): void {
    this.client.close();
  }
}
