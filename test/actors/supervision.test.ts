// The restart policy's decisions (src/actors/supervision.ts), on a clock the test sets: outages are restarted with
// capped backoff forever, other crashes give up only once they have kept coming for giveUpAfterMs.
import test from 'ava';
import { CrashCounter, DEFAULT_RESTART_POLICY } from '../../src/actors/supervision.ts';
import { DependencyUnavailable } from '../../src/errors/outage.ts';
import { OrchError, Errors } from '../../src/errors/catalog.ts';

const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });

test('outages never give up; delays grow, jittered, up to the outage cap', (t) => {
  const c = new CrashCounter();
  let now = 0;
  const delays: number[] = [];
  // Ten minutes of an outage, crash after crash.
  while (now < 600_000) {
    const v = c.recordCrash('a', now % 2 ? refused : new DependencyUnavailable('database', 'database unavailable'), now);
    if (v.action !== 'restart') return t.fail(`gave up during an outage at ${now} ms`);
    t.true(v.outage);
    delays.push(v.delayMs);
    now += v.delayMs + 10;
  }
  t.true(delays[0]! >= 50 && delays[0]! <= 100, `first delay ${delays[0]}`);
  t.true(delays[1]! > delays[0]! || delays[1]! >= 100);
  t.true(Math.max(...delays) <= DEFAULT_RESTART_POLICY.maxOutageDelayMs);
  t.true(Math.max(...delays) >= DEFAULT_RESTART_POLICY.maxOutageDelayMs / 2);
});

test('a crash loop that is not an outage gives up after giveUpAfterMs, measured in time, not in crashes', (t) => {
  const c = new CrashCounter();
  const bug = new Error('Cannot read properties of undefined');
  let now = 1_000;
  let verdict = c.recordCrash('b', bug, now);
  const first = now;
  let crashes = 1;
  while (verdict.action === 'restart') {
    t.false(verdict.outage);
    now += verdict.delayMs;
    verdict = c.recordCrash('b', bug, now);
    crashes++;
  }
  t.is(verdict.action, 'give-up');
  t.true(now - first >= DEFAULT_RESTART_POLICY.giveUpAfterMs);
  t.true(now - first < DEFAULT_RESTART_POLICY.giveUpAfterMs + DEFAULT_RESTART_POLICY.maxDelayMs + 1);
  t.true(crashes > 3, 'more than three crashes: the limit is time');
  // A terminal OrchError counts like a bug; an outage in between starts the clock again.
  const d = new CrashCounter();
  d.recordCrash('c', new OrchError(Errors.CONFLICT, 'duplicate'), 0);
  d.recordCrash('c', refused, 20_000);
  t.is(d.recordCrash('c', new OrchError(Errors.CONFLICT, 'duplicate'), 40_000).action, 'restart');
  t.is(d.recordCrash('c', new OrchError(Errors.CONFLICT, 'duplicate'), 65_000).action, 'restart');
  t.is(d.recordCrash('c', new OrchError(Errors.CONFLICT, 'duplicate'), 90_000).action, 'restart');
  t.is(d.recordCrash('c', new OrchError(Errors.CONFLICT, 'duplicate'), 100_001).action, 'give-up');
});

test('a stable run ends the streak', (t) => {
  const c = new CrashCounter();
  const bug = new Error('bug');
  c.recordCrash('d', bug, 0);
  c.recordCrash('d', bug, 50_000 - DEFAULT_RESTART_POLICY.stableAfterMs - 1);
  const v = c.recordCrash('d', bug, 50_000 + DEFAULT_RESTART_POLICY.stableAfterMs);
  t.is(v.action, 'restart');
  if (v.action === 'restart') t.is(v.crashes, 1);
});
