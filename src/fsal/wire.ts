// FsalService's gRPC definition with serializers that encode the two large messages — a Write's request and a
// Read's answer — into one buffer of their final size. The generated encoders write into @bufbuild/protobuf's
// BinaryWriter, which grows by doubling from 128 bytes and copies the result out (finish()'s slice, then
// Buffer.from): a 1 MiB message allocated ~4 MiB in steps and copied its bytes three times. That garbage was most of
// the node's CPU in a gRPC read/write loop after waiting: the collector took 19 % of the samples (`node --cpu-prof`,
// docs/BENCHMARKS.md "FSAL ... (stop 28)"). The wire bytes are the same; only the allocation differs.
import { BinaryReader, BinaryWriter } from '@bufbuild/protobuf/wire';
import { FsalServiceService, ReadResponse, WriteRequest } from '../gen/orch/fsal/v1/fsal.js';
import { FsalExtensionServiceService } from '../gen/orch/fsal/v1/fsal_extension.js';

/** The BinaryWriter fields the sized path sets (JavaScript properties; private only in its .d.ts). */
interface WriterInternals {
  buffer: Uint8Array;
  pos: number;
}

/** Room for everything but the bytes field: ids, path, offset, tags, lengths (strings at 3 bytes per UTF-16 unit). */
function overhead(...strings: string[]): number {
  return 64 + strings.reduce((n, s) => n + 3 * s.length, 0);
}

/**
 * `message` encoded into a buffer of `capacity` bytes, answered without a copy. A short guess still encodes
 * correctly (the writer grows as usual); a writer without the expected fields takes the generic path.
 */
export function encodeSized<T>(codec: { encode(message: T, writer?: BinaryWriter): BinaryWriter }, message: T, capacity: number): Buffer {
  const writer = new BinaryWriter();
  const w = writer as unknown as WriterInternals;
  if (!(w.buffer instanceof Uint8Array) || typeof w.pos !== 'number') return Buffer.from(codec.encode(message, writer).finish());
  w.buffer = new Uint8Array(capacity);
  codec.encode(message, writer);
  return Buffer.from(w.buffer.buffer, w.buffer.byteOffset, w.pos);
}

/**
 * The two large messages decoded with their payload a Buffer viewing the received message rather than a copy. The
 * generated decoders answer `Buffer.from(reader.bytes())`, a copy of the payload (reader.bytes() is itself a view):
 * for a 1 MiB Write or Read that was one of the four 1 MiB copies of a call, ~0.5 ms of CPU each here plus the
 * collector's share (docs/BENCHMARKS.md, stop 34). A view is safe: grpc-js hands each deserializer a buffer of its own
 * (the message assembled from the HTTP/2 DATA chunks, which Node does not reuse), and the view keeps only that message
 * alive. Field for field what the generated decoders do (unknown fields skipped, the last occurrence wins).
 */
function view(bytes: Uint8Array): Buffer {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

/** The generated decoders' uint64 → number (they refuse a value past Number.MAX_SAFE_INTEGER). */
function toNumber(value: bigint | string): number {
  const n = Number(value);
  if (!Number.isSafeInteger(n)) throw new Error('Value is larger than Number.MAX_SAFE_INTEGER');
  return n;
}

export function decodeWriteRequest(wire: Uint8Array): WriteRequest {
  const reader = new BinaryReader(wire);
  const message: WriteRequest = { execution_id: '', volume_id: '', path: '', offset: 0, data: Buffer.alloc(0) };
  while (reader.pos < reader.len) {
    const tag = reader.uint32();
    if (tag === 10) message.execution_id = reader.string();
    else if (tag === 18) message.volume_id = reader.string();
    else if (tag === 26) message.path = reader.string();
    else if (tag === 32) message.offset = toNumber(reader.uint64());
    else if (tag === 42) message.data = view(reader.bytes());
    else if ((tag & 7) === 4 || tag === 0) break;
    else reader.skip(tag & 7);
  }
  return message;
}

export function decodeReadResponse(wire: Uint8Array): ReadResponse {
  const reader = new BinaryReader(wire);
  const message: ReadResponse = { data: Buffer.alloc(0), eof: false };
  while (reader.pos < reader.len) {
    const tag = reader.uint32();
    if (tag === 10) message.data = view(reader.bytes());
    else if (tag === 16) message.eof = reader.bool();
    else if ((tag & 7) === 4 || tag === 0) break;
    else reader.skip(tag & 7);
  }
  return message;
}

/** Room a Write request's fields before its `data` may take (writeRequestInPlace): ids, path, offset, tags, lengths. */
export function writeHeaderRoom(m: Pick<WriteRequest, 'execution_id' | 'volume_id' | 'path'>): number {
  return 32 + Buffer.byteLength(m.execution_id) + Buffer.byteLength(m.volume_id) + Buffer.byteLength(m.path);
}

/**
 * The encoded Write request of `room[at, at + length)`, made in place: the fields before `data` are written into the
 * bytes just before it (`at` must be at least writeHeaderRoom), so the FUSE write-behind's buffer is the request as
 * it stands, with no 1 MiB message buffer allocated (and zero-filled) and copied into per Write. The same bytes as
 * encodeSized's: fields in number order, defaults left out.
 */
export function writeRequestInPlace(m: Omit<WriteRequest, 'data'>, room: Buffer, at: number, length: number): Buffer {
  const w = new BinaryWriter();
  if (m.execution_id !== '') w.uint32(10).string(m.execution_id);
  if (m.volume_id !== '') w.uint32(18).string(m.volume_id);
  if (m.path !== '') w.uint32(26).string(m.path);
  if (m.offset !== 0) w.uint32(32).uint64(m.offset);
  if (length > 0) w.uint32(42).uint32(length);
  const head = w.finish();
  if (head.length > at) throw new Error(`a Write's header (${head.length} bytes) does not fit its room (${at})`);
  room.set(head, at - head.length);
  return room.subarray(at - head.length, at + length);
}

function encodeWriteRequest(m: WriteRequest): Buffer {
  return encodeSized(WriteRequest, m, m.data.length + overhead(m.execution_id, m.volume_id, m.path));
}

/** Marks a streamed request the decoder refused (FSAL_EXTENSION_DEFINITION): its handler answers INVALID_ARGUMENT. */
export const UNDECODABLE = Symbol('undecodable');

/**
 * FsalExtensionService (an orch extension, proto/orch/fsal/v1/fsal_extension.proto) with the Write request's sized encoder
 * and viewing decoder. A request the decoder refuses (an offset past 2^53) becomes `{ [UNDECODABLE]: reason }`
 * rather than ending the whole call INTERNAL inside grpc-js (as decodingSafely does for unary calls).
 */
export const FSAL_EXTENSION_DEFINITION: typeof FsalExtensionServiceService = {
  statFs: FsalExtensionServiceService.statFs,
  writeStream: {
    ...FsalExtensionServiceService.writeStream,
    // A Buffer is a request encoded already (writeRequestInPlace).
    requestSerialize: (m: WriteRequest | Buffer): Buffer => (Buffer.isBuffer(m) ? m : encodeWriteRequest(m)),
    requestDeserialize: (bytes: Buffer): WriteRequest => {
      try {
        return decodeWriteRequest(bytes);
      } catch (err) {
        return { [UNDECODABLE]: err instanceof Error ? err.message : String(err) } as unknown as WriteRequest;
      }
    },
  },
};

/**
 * FsalServiceService with sized serializers for Write requests (clients) and Read answers (the server), and
 * deserializers that view their payload in the received message (the server's Write requests, the clients' Read
 * answers).
 */
export const FSAL_DEFINITION: typeof FsalServiceService = {
  ...FsalServiceService,
  write: {
    ...FsalServiceService.write,
    requestSerialize: encodeWriteRequest,
    requestDeserialize: decodeWriteRequest,
  },
  read: {
    ...FsalServiceService.read,
    responseSerialize: (m: ReadResponse): Buffer => encodeSized(ReadResponse, m, m.data.length + 16),
    responseDeserialize: decodeReadResponse,
  },
};
