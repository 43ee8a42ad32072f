// FsalService's gRPC definition with serializers that encode the two large messages — a Write's request and a
// Read's answer — into one buffer of their final size. The generated encoders write into @bufbuild/protobuf's
// BinaryWriter, which grows by doubling from 128 bytes and copies the result out (finish()'s slice, then
// Buffer.from): a 1 MiB message allocated ~4 MiB in steps and copied its bytes three times. That garbage was most of
// the node's CPU in a gRPC read/write loop after waiting: the collector took 19 % of the samples (`node --cpu-prof`,
// docs/BENCHMARKS.md "FSAL ... (stop 28)"). The wire bytes are the same; only the allocation differs.
import { BinaryWriter } from '@bufbuild/protobuf/wire';
import { FsalServiceService, ReadResponse, WriteRequest } from '../gen/orch/fsal/v1/fsal.js';

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

/** FsalServiceService with sized serializers for Write requests (clients) and Read answers (the server). */
export const FSAL_DEFINITION: typeof FsalServiceService = {
  ...FsalServiceService,
  write: {
    ...FsalServiceService.write,
    requestSerialize: (m: WriteRequest): Buffer => encodeSized(WriteRequest, m, m.data.length + overhead(m.execution_id, m.volume_id, m.path)),
  },
  read: {
    ...FsalServiceService.read,
    responseSerialize: (m: ReadResponse): Buffer => encodeSized(ReadResponse, m, m.data.length + 16),
  },
};
