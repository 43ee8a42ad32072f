// The sized serializers of FsalService's large messages (src/fsal/wire.ts) write the same bytes as the generated
// encoders, whatever the capacity guess, and decode back to the message.
import test from 'ava';
import { randomBytes } from 'node:crypto';
import { FsalServiceService, ReadResponse, WriteRequest } from '../../src/gen/orch/fsal/v1/fsal.js';
import { encodeSized, FSAL_DEFINITION } from '../../src/fsal/wire.ts';

const write: WriteRequest = {
  execution_id: '6f1c1f8e-4a53-4a0e-9d36-8f5f8a1b2c3d',
  volume_id: '0b7e2a44-91c2-4d8e-a1f0-3c2b1a0f9e8d',
  path: 'dir/ünïcødé 文件.bin',
  offset: 5 * 1024 * 1024 * 1024 + 7,
  data: randomBytes(1024 * 1024 + 3),
};

test('a Write request: the same bytes as the generated encoder, and it decodes back', (t) => {
  const generic = Buffer.from(WriteRequest.encode(write).finish());
  const sized = FSAL_DEFINITION.write.requestSerialize(write);
  t.true(sized.equals(generic));
  t.deepEqual(FsalServiceService.write.requestDeserialize(sized), { ...write, data: Buffer.from(write.data) });
});

test('a Read answer: the same bytes, empty and large', (t) => {
  for (const m of [{ data: Buffer.alloc(0), eof: true }, { data: randomBytes(2 * 1024 * 1024), eof: false }] as ReadResponse[]) {
    t.true(FSAL_DEFINITION.read.responseSerialize(m).equals(Buffer.from(ReadResponse.encode(m).finish())));
  }
});

test('a capacity guess that is too small still encodes correctly (the writer grows)', (t) => {
  for (const capacity of [0, 1, 17, write.data.length]) {
    t.true(encodeSized(WriteRequest, write, capacity).equals(Buffer.from(WriteRequest.encode(write).finish())), `capacity ${capacity}`);
  }
});
