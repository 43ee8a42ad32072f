// The grpc_auth gate over real sockets: refusals are UNAUTHENTICATED (unary and streaming), exempt methods pass
// through, a valid token reaches the handler with its principal, x-tenant-id reaches the Authenticator, and
// what handlers throw is mapped to gRPC statuses. The Authenticator here is a stand-in that accepts one fixed
// token: this tests the gate; the JWT authenticator has its own tests.
import test from 'ava';
import { credentials, status, type ServerUnaryCall, type ServerWritableStream, type sendUnaryData } from '@grpc/grpc-js';
import { FsalServiceClient, FsalServiceService } from '../../src/gen/orch/fsal/v1/fsal.js';
import {
  AttestAgentRequest,
  OrchRuntimeClient,
  OrchRuntimeService,
  type AttestAgentResponse,
  type ExecuteAgentRequest,
  type ExecutionEvent,
  type QueryCortexRequest,
  type QueryCortexResponse,
} from '../../src/gen/orch/runtime/v1/runtime.js';
import { SYSTEM_TENANT, type Authenticator, type Principal } from '../../src/auth/principal.ts';
import { Errors, OrchError } from '../../src/errors/catalog.ts';
import { DEFAULT_EXEMPT_METHODS, findPrincipal, isExempt, principalOf } from '../../src/gateway/grpc/auth.ts';
import { createRuntimeServer } from '../../src/gateway/grpc/runtime-server.ts';
import { startGrpcServer, type RunningGrpcServer } from '../../src/gateway/grpc/start.ts';
import { silentLogger } from '../../src/logging/logger.ts';
import { bearer, call } from './helpers.ts';

const GOOD_TOKEN = 'good-token';
/** Also accepted; lets one test find its own calls among those of concurrent tests. */
const GOOD_TOKEN_2 = 'good-token-2';
const CRASH_TOKEN = 'crash-token';

/** Accepts GOOD_TOKEN (and GOOD_TOKEN_2) as a service account that may delegate; records every call. */
class OneTokenAuthenticator implements Authenticator {
  readonly calls: { token: string | undefined; tenantHeader: string | undefined }[] = [];

  async authenticate(token: string | undefined, tenantHeader: string | undefined): Promise<Principal> {
    this.calls.push({ token, tenantHeader });
    if (token === CRASH_TOKEN) throw new Error('jwks endpoint unreachable');
    if (token !== GOOD_TOKEN && token !== GOOD_TOKEN_2) throw new OrchError(Errors.UNAUTHENTICATED, 'invalid token: signature mismatch');
    return {
      subject: 'service-account-test',
      roles: ['operator'],
      tenantId: tenantHeader ?? SYSTEM_TENANT,
      homeTenantId: SYSTEM_TENANT,
      isServiceAccount: true,
      delegated: tenantHeader !== undefined,
    };
  }
}

const authenticator = new OneTokenAuthenticator();
let server: RunningGrpcServer;
let runtime: InstanceType<typeof OrchRuntimeClient>;
let fsal: InstanceType<typeof FsalServiceClient>;
/** Principals seen by findPrincipal() in the exempt handler. */
const seenInExempt: (Principal | undefined)[] = [];

test.before(async () => {
  server = await startGrpcServer(
    createRuntimeServer({
      auth: {
        enabled: true,
        exempt_methods: [...DEFAULT_EXEMPT_METHODS, '/orch.runtime.v1.OrchRuntime/QueryCortexPatterns', '/orch.fsal.v1.FsalService/*'],
        authenticator,
      },
      logger: silentLogger(),
      handlers: {
        // Echoes the principal as JSON in the token field.
        attestAgent: (call: ServerUnaryCall<AttestAgentRequest, AttestAgentResponse>, callback: sendUnaryData<AttestAgentResponse>) => {
          callback(null, { security_token: JSON.stringify(principalOf(call)) });
        },
        // Streams one event carrying the principal, then fails or completes as the input asks.
        executeAgent: async (call: ServerWritableStream<ExecuteAgentRequest, ExecutionEvent>) => {
          const p = principalOf(call);
          call.write({
            event: { $case: 'execution_started', value: { execution_id: p.tenantId, agent_id: p.subject, started_at: '' } },
          });
          if (call.request.input === 'not-found') throw new OrchError(Errors.NOT_FOUND, 'agent not found');
          if (call.request.input === 'crash') throw new Error('secret internal detail');
          call.end();
        },
        storeCortexPattern: async () => {
          throw new OrchError(Errors.VALIDATION, 'error_signature is required');
        },
        ingestStimulus: async () => {
          throw new Error('secret internal detail');
        },
        queryCortexPatterns: (call: ServerUnaryCall<QueryCortexRequest, QueryCortexResponse>, callback: sendUnaryData<QueryCortexResponse>) => {
          seenInExempt.push(findPrincipal(call));
          callback(null, { patterns: [] });
        },
      },
    }),
    '127.0.0.1',
    0,
  );
  runtime = new OrchRuntimeClient(`127.0.0.1:${server.port}`, credentials.createInsecure());
  fsal = new FsalServiceClient(`127.0.0.1:${server.port}`, credentials.createInsecure());
});

test.after.always(async () => {
  runtime?.close();
  fsal?.close();
  await server?.close();
});

test('no token: unary call is UNAUTHENTICATED and never reaches the handler', async (t) => {
  const outcome = await call(runtime, OrchRuntimeService.attestAgent);
  t.is(outcome.code, status.UNAUTHENTICATED);
  t.regex(outcome.details, /missing bearer token/);
  t.is(outcome.errorCode, 'unauthenticated');
  t.deepEqual(outcome.messages, []);
});

test('no token: streaming call is UNAUTHENTICATED with no events', async (t) => {
  const outcome = await call(runtime, OrchRuntimeService.executeAgent);
  t.is(outcome.code, status.UNAUTHENTICATED);
  t.deepEqual(outcome.messages, []);
});

test('no token on an unimplemented method: UNAUTHENTICATED comes first', async (t) => {
  const outcome = await call(runtime, OrchRuntimeService.validateWithJudges);
  t.is(outcome.code, status.UNAUTHENTICATED);
});

test('a token that is not Bearer is refused', async (t) => {
  const md = bearer(GOOD_TOKEN);
  md.set('authorization', `Basic ${GOOD_TOKEN}`);
  const outcome = await call(runtime, OrchRuntimeService.attestAgent, undefined, md);
  t.is(outcome.code, status.UNAUTHENTICATED);
});

test('an invalid token is UNAUTHENTICATED with the authenticator message', async (t) => {
  const outcome = await call(runtime, OrchRuntimeService.executeAgent, undefined, bearer('forged'));
  t.is(outcome.code, status.UNAUTHENTICATED);
  t.is(outcome.details, 'invalid token: signature mismatch');
});

test('an authenticator that crashes still yields UNAUTHENTICATED, without its detail', async (t) => {
  const outcome = await call(runtime, OrchRuntimeService.attestAgent, undefined, bearer(CRASH_TOKEN));
  t.is(outcome.code, status.UNAUTHENTICATED);
  t.is(outcome.details, 'invalid bearer token');
});

test('exempt methods pass through without a token: exact path and service wildcard', async (t) => {
  const before = seenInExempt.length;
  const query = await call(runtime, OrchRuntimeService.queryCortexPatterns);
  t.is(query.code, status.OK);
  t.is(seenInExempt.length, before + 1);
  t.is(seenInExempt.at(-1), undefined);
  const read = await call(fsal, FsalServiceService.read);
  t.is(read.code, status.UNIMPLEMENTED);
  t.is(read.details, 'FsalService.Read is not implemented yet');
});

test('a valid token reaches the unary handler, which sees the principal', async (t) => {
  const outcome = await call(runtime, OrchRuntimeService.attestAgent, AttestAgentRequest.fromPartial({ agent_id: 'a' }), bearer(GOOD_TOKEN));
  t.is(outcome.code, status.OK, outcome.details);
  const principal = JSON.parse(outcome.messages[0]?.security_token ?? 'null') as Principal;
  t.is(principal.subject, 'service-account-test');
  t.is(principal.tenantId, SYSTEM_TENANT);
  t.false(principal.delegated);
});

test('x-tenant-id is passed to the authenticator and the streaming handler sees the delegated principal', async (t) => {
  const outcome = await call(runtime, OrchRuntimeService.executeAgent, undefined, bearer(GOOD_TOKEN, 'acme'));
  t.is(outcome.code, status.OK, outcome.details);
  t.true(authenticator.calls.some((c) => c.token === GOOD_TOKEN && c.tenantHeader === 'acme'));
  t.deepEqual(outcome.messages[0]?.event, {
    $case: 'execution_started',
    value: { execution_id: 'acme', agent_id: 'service-account-test', started_at: '' },
  });
});

test('without x-tenant-id the authenticator gets undefined', async (t) => {
  const outcome = await call(runtime, OrchRuntimeService.attestAgent, undefined, bearer(GOOD_TOKEN_2));
  t.is(outcome.code, status.OK);
  const mine = authenticator.calls.filter((c) => c.token === GOOD_TOKEN_2);
  t.deepEqual(mine, [{ token: GOOD_TOKEN_2, tenantHeader: undefined }]);
});

test('an OrchError thrown by a unary handler maps through spec.grpc', async (t) => {
  const outcome = await call(runtime, OrchRuntimeService.storeCortexPattern, undefined, bearer(GOOD_TOKEN));
  t.is(outcome.code, status.INVALID_ARGUMENT);
  t.is(outcome.details, 'error_signature is required');
  t.is(outcome.errorCode, 'validation_failed');
});

test('any other error from a handler is INTERNAL without its message', async (t) => {
  const outcome = await call(runtime, OrchRuntimeService.ingestStimulus, undefined, bearer(GOOD_TOKEN));
  t.is(outcome.code, status.INTERNAL);
  t.is(outcome.details, 'internal error');
  t.is(outcome.errorCode, 'internal');
});

test('a streaming handler that throws after writing: events already sent arrive, then the mapped status', async (t) => {
  const request: ExecuteAgentRequest = { agent_id: 'x', input: 'not-found', context_json: '' };
  const notFound = await call(runtime, OrchRuntimeService.executeAgent, request, bearer(GOOD_TOKEN));
  t.is(notFound.code, status.NOT_FOUND);
  t.is(notFound.details, 'agent not found');
  t.is(notFound.messages.length, 1);

  const crash = await call(runtime, OrchRuntimeService.executeAgent, { ...request, input: 'crash' }, bearer(GOOD_TOKEN));
  t.is(crash.code, status.INTERNAL);
  t.is(crash.details, 'internal error');
});

test('exemption rules: exact paths, service wildcards, the inner-loop default', (t) => {
  t.deepEqual(DEFAULT_EXEMPT_METHODS, ['/orch.v1.InnerLoop/Generate']);
  t.true(isExempt('/orch.v1.InnerLoop/Generate', DEFAULT_EXEMPT_METHODS));
  t.false(isExempt('/orch.runtime.v1.OrchRuntime/ExecuteAgent', DEFAULT_EXEMPT_METHODS));
  t.true(isExempt('/orch.fsal.v1.FsalService/Read', ['/orch.fsal.v1.FsalService/*']));
  t.false(isExempt('/orch.fsal.v1.FsalServiceX/Read', ['/orch.fsal.v1.FsalService/*']));
  t.false(isExempt('/orch.runtime.v1.OrchRuntime/ExecuteAgentX', ['/orch.runtime.v1.OrchRuntime/ExecuteAgent']));
});
