// The outage/terminal split (src/errors/outage.ts) and how HTTP and gRPC answer an outage: 503 + Retry-After and
// UNAVAILABLE, also when a driver's error sits under another error; terminal errors keep their status.
import test from 'ava';
import Fastify from 'fastify';
import { status } from '@grpc/grpc-js';
import { asOutage, DependencyUnavailable, isOutage } from '../../src/errors/outage.ts';
import { Errors, OrchError } from '../../src/errors/catalog.ts';
import { StimulusError } from '../../src/stimuli/errors.ts';
import { installErrorHandling } from '../../src/gateway/http/errors.ts';
import { toGrpcError } from '../../src/gateway/grpc/errors.ts';

const pgError = (code: string, message: string): Error => Object.assign(new Error(message), { code });

test('outages: connection failures, server shutdown states, driver messages, wrapped ones', (t) => {
  const outages = [
    Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' }),
    Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' }),
    new Error('Connection terminated unexpectedly'),
    new Error('timeout exceeded when trying to connect'),
    pgError('57P01', 'terminating connection due to administrator command'),
    pgError('57P03', 'the database system is starting up'),
    pgError('08006', 'connection failure'),
    pgError('53300', 'sorry, too many clients already'),
    Object.assign(new Error('Reached the max retries per request limit (which is 3).'), { name: 'MaxRetriesPerRequestError' }),
    new Error('Connection is closed.'),
    new AggregateError([Object.assign(new Error('connect ECONNREFUSED ::1:5432'), { code: 'ECONNREFUSED' })], 'connect failed'),
    new OrchError(Errors.INTERNAL, 'wrapped', { cause: new Error('Connection terminated unexpectedly') }),
    new DependencyUnavailable('redis', 'redis unavailable'),
  ];
  for (const err of outages) t.true(isOutage(err), String(err));
  const terminal = [
    pgError('23505', 'duplicate key value violates unique constraint'),
    pgError('42601', 'syntax error at or near'),
    pgError('40001', 'could not serialize access'),
    new TypeError('Cannot read properties of undefined'),
    new OrchError(Errors.NOT_FOUND, 'no such run'),
    'a string',
    undefined,
  ];
  for (const err of terminal) t.false(isOutage(err), String(err));
  const wrapped = asOutage('database', outages[0]);
  t.true(wrapped instanceof DependencyUnavailable);
  t.is((wrapped as DependencyUnavailable).spec, Errors.UNAVAILABLE);
  t.is(asOutage('database', terminal[0]), terminal[0], 'a terminal error is passed through unchanged');
});

test('HTTP: an outage answers 503 with Retry-After, however it is wrapped; 4xx stay 4xx', async (t) => {
  const app = Fastify();
  installErrorHandling(app);
  const throwing: Record<string, unknown> = {
    driver: Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' }),
    typed: new DependencyUnavailable('database', 'database unavailable: Connection terminated unexpectedly'),
    stimulus: new StimulusError('workflow_error', { stimulusId: 's-1', reason: 'start failed', cause: new Error('Connection terminated unexpectedly') }),
    conflict: new OrchError(Errors.CONFLICT, 'exists', { cause: new Error('Connection terminated unexpectedly') }),
    bug: new TypeError('x is undefined'),
  };
  for (const [name, err] of Object.entries(throwing)) {
    app.get(`/${name}`, async () => {
      throw err;
    });
  }
  await app.ready();
  t.teardown(() => app.close());
  for (const name of ['driver', 'typed', 'stimulus']) {
    const res = await app.inject({ method: 'GET', url: `/${name}` });
    t.is(res.statusCode, 503, name);
    t.is(res.headers['retry-after'], '5', name);
    t.regex(res.json<{ error: string }>().error, /unavailable; retry later/, name);
  }
  t.is((await app.inject({ method: 'GET', url: '/conflict' })).statusCode, 409);
  const bug = await app.inject({ method: 'GET', url: '/bug' });
  t.is(bug.statusCode, 500);
  t.is(bug.headers['retry-after'], undefined);
});

test('gRPC: an outage is UNAVAILABLE, also under a stimulus error; others keep their status', (t) => {
  t.is(toGrpcError(new Error('Connection terminated unexpectedly')).code, status.UNAVAILABLE);
  t.is(toGrpcError(new StimulusError('workflow_error', { cause: Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' }) })).code, status.UNAVAILABLE);
  t.is(toGrpcError(new StimulusError('workflow_error', { reason: 'not deployed' })).code, status.INTERNAL);
  t.is(toGrpcError(new OrchError(Errors.NOT_FOUND, 'no')).code, status.NOT_FOUND);
  t.is(toGrpcError(new TypeError('bug')).code, status.INTERNAL);
});
