// isoNow (src/util/iso-now.ts): the ISO string of the current millisecond, made once per millisecond.
import test from 'ava';
import { isoNow } from '../../src/util/iso-now.ts';

test('isoNow is new Date().toISOString() of the current millisecond, and moves with the clock', async (t) => {
  const before = Date.now();
  const s = isoNow();
  const after = Date.now();
  t.regex(s, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
  const ms = Date.parse(s);
  t.true(ms >= before && ms <= after, `${s} within [${before}, ${after}]`);
  await new Promise((r) => setTimeout(r, 5));
  t.true(Date.parse(isoNow()) > ms, 'a later millisecond gives a later string');
});
