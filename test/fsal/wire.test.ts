// The sized serializers of FsalService's large messages (src/fsal/wire.ts) write the same bytes as the generated
// encoders, whatever the capacity guess, and decode back to the message.
import test from 'ava';
import { randomBytes } from 'node:crypto';
import { FsalServiceService, ReadResponse, WriteRequest } from '../../src/gen/orch/fsal/v1/fsal.js';
import { encodeSized, FSAL_DEFINITION, FSAL_EXTENSION_DEFINITION, writeHeaderRoom, writeRequestInPlace } from '../../src/fsal/wire.ts';

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

// A 1 MiB payload copied out of the received message was one of the four 1 MiB copies of a call (docs/BENCHMARKS.md,
// stop 34): the server's Write requests and the clients' Read answers decode with their payload viewing the message.
test('the decoded payload of a Write request and of a Read answer views the received message (no copy)', (t) => {
  const wire = FSAL_DEFINITION.write.requestSerialize(write);
  const req = FSAL_DEFINITION.write.requestDeserialize(wire);
  t.true(Buffer.isBuffer(req.data));
  t.is(req.data.buffer, wire.buffer, 'the Write payload is a view of the received bytes');
  t.true(req.data.equals(write.data));
  const answer: ReadResponse = { data: randomBytes(2 * 1024 * 1024), eof: true };
  const rwire = FSAL_DEFINITION.read.responseSerialize(answer);
  const res = FSAL_DEFINITION.read.responseDeserialize(rwire);
  t.is(res.data.buffer, rwire.buffer, 'the Read payload is a view of the received bytes');
  t.deepEqual(res, answer);
});

test('the viewing decoders read what the generated ones do: defaults, unknown fields, repeated fields (last wins)', (t) => {
  const unknown = Buffer.from([0x30, 0x05, 0x3a, 0x02, 0x61, 0x62, 0x45, 1, 2, 3, 4, 0x49, 1, 2, 3, 4, 5, 6, 7, 8]); // fields 6 (varint), 7 (bytes), 8 (fixed32), 9 (fixed64)
  const cases: Buffer[] = [
    Buffer.alloc(0),
    FSAL_DEFINITION.write.requestSerialize(write),
    Buffer.concat([unknown, FSAL_DEFINITION.write.requestSerialize(write), unknown]),
    Buffer.concat([FSAL_DEFINITION.write.requestSerialize(write), FSAL_DEFINITION.write.requestSerialize({ ...write, path: 'b', data: Buffer.from('second') })]),
  ];
  for (const wire of cases) t.deepEqual(FSAL_DEFINITION.write.requestDeserialize(wire), FsalServiceService.write.requestDeserialize(wire));
  const reads: Buffer[] = [
    Buffer.alloc(0),
    Buffer.concat([unknown, FSAL_DEFINITION.read.responseSerialize({ data: Buffer.from('xyz'), eof: true }), unknown]),
    Buffer.concat([FSAL_DEFINITION.read.responseSerialize({ data: Buffer.from('one'), eof: true }), FSAL_DEFINITION.read.responseSerialize({ data: Buffer.from('two'), eof: false })]),
  ];
  for (const wire of reads) t.deepEqual(FSAL_DEFINITION.read.responseDeserialize(wire), FsalServiceService.read.responseDeserialize(wire));
  t.throws(() => FSAL_DEFINITION.write.requestDeserialize(Buffer.from([0x2a, 0x10, 1])), undefined, 'a truncated payload is refused, as the generated decoder refuses it');
  t.throws(() => FsalServiceService.write.requestDeserialize(Buffer.from([0x2a, 0x10, 1])));
});

test('a Write request encoded in place before its data (the FUSE write-behind): the same bytes as the generated encoder', (t) => {
  for (const m of [write, { ...write, offset: 0 }, { ...write, path: '', data: randomBytes(10) }]) {
    const room = writeHeaderRoom(m);
    const raw = Buffer.alloc(room + m.data.length + 100, 0xee);
    Buffer.from(m.data).copy(raw, room);
    const inPlace = writeRequestInPlace(m, raw, room, m.data.length);
    t.true(inPlace.equals(Buffer.from(WriteRequest.encode(m).finish())));
    t.is(inPlace.buffer, raw.buffer, 'no copy: a view of the write-behind buffer');
    t.true(FSAL_EXTENSION_DEFINITION.writeStream.requestSerialize(inPlace as unknown as WriteRequest).equals(inPlace), 'the stream serializer sends it as it is');
  }
  t.throws(() => writeRequestInPlace(write, Buffer.alloc(10 + write.data.length), 10, write.data.length), { message: /does not fit/ });
});
