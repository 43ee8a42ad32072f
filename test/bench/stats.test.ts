// bench/stats.ts: percentiles by nearest rank (issue 16: p99 of 100 samples used to be the maximum).
import test from 'ava';
import { median, percentile } from '../../bench/stats.ts';

const hundred = Array.from({ length: 100 }, (_, i) => i + 1); // 1..100, sorted

test('nearest rank: the p-th percentile of 1..100 is p, not p+1 (p·n/100 whole)', (t) => {
  t.is(percentile(hundred, 99), 99);
  t.is(percentile(hundred, 50), 50);
  t.is(percentile(hundred, 1), 1);
  t.is(percentile(hundred, 100), 100);
});

test('nearest rank when p·n/100 is fractional rounds the rank up', (t) => {
  const ten = Array.from({ length: 10 }, (_, i) => (i + 1) * 10); // 10..100
  t.is(percentile(ten, 95), 100); // rank ceil(9.5) = 10
  t.is(percentile(ten, 91), 100);
  t.is(percentile(ten, 90), 90); // rank 9
  t.is(percentile(ten, 50), 50); // rank 5
  t.is(percentile([7], 99), 7);
});

test('edge cases: no samples is 0, p=0 is the minimum', (t) => {
  t.is(percentile([], 99), 0);
  t.is(percentile(hundred, 0), 1);
  t.is(median([3, 1, 2, 4]), 2.5);
});
