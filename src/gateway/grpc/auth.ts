// Bearer auth for the runtime gRPC port (seed 000 "Authentication"; config `spec.grpc_auth`). When enabled,
// every method not listed in `exempt_methods` needs metadata `authorization: Bearer <token>`; `x-tenant-id`
// is handed to the Authenticator, which applies it only for service accounts. Failures answer
// UNAUTHENTICATED, for streaming calls too. The resolved Principal is kept per call for the handlers.
import type { ServiceDefinition, UntypedServiceImplementation } from '@grpc/grpc-js';
import type { Authenticator, Principal } from '../../auth/principal.ts';
import { Errors, OrchError, isOrchError } from '../../errors/catalog.ts';
import type { Logger } from '../../logging/logger.ts';
import { guardService, type CallGate, type GrpcCall } from './guard.ts';

/** Exempt when the config names none: the inner-loop generate method used by agent bootstrap containers. */
export const DEFAULT_EXEMPT_METHODS: readonly string[] = ['/orch.v1.InnerLoop/Generate'];

export interface GrpcAuthOptions {
  /** `spec.grpc_auth.enabled`. When false every call passes and no principal is resolved. */
  enabled: boolean;
  /**
   * `spec.grpc_auth.exempt_methods`: full method paths (`/orch.runtime.v1.OrchRuntime/ExecuteAgent`), or
   * `/<package>.<Service>/*` for a whole service. Undefined means DEFAULT_EXEMPT_METHODS.
   */
  exempt_methods?: readonly string[];
  authenticator: Authenticator;
}

const principals = new WeakMap<object, Principal>();

/** The principal of an authenticated call, or undefined when auth is off or the method is exempt. */
export function findPrincipal(call: object): Principal | undefined {
  return principals.get(call);
}

/** The principal of a call that must be authenticated; a handler reaching this without one is refused. */
export function principalOf(call: object): Principal {
  const principal = principals.get(call);
  if (!principal) throw new OrchError(Errors.UNAUTHENTICATED, 'not authenticated');
  return principal;
}

export function isExempt(path: string, exempt: readonly string[]): boolean {
  return exempt.some((m) => m === path || (m.endsWith('/*') && path.startsWith(m.slice(0, -1))));
}

/** The token of `Bearer <token>` (scheme case-insensitive); anything else is no token. */
export function bearerToken(value: string | undefined): string | undefined {
  return value === undefined ? undefined : /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(value)?.[1];
}

function firstString(call: GrpcCall, key: string): string | undefined {
  const value = call.metadata.get(key)[0];
  return typeof value === 'string' ? value : undefined;
}

/** The gate that authenticates a call and records its principal. */
export function authGate(options: GrpcAuthOptions, logger: Logger): CallGate {
  const exempt = options.exempt_methods ?? DEFAULT_EXEMPT_METHODS;
  return async (call, path) => {
    if (!options.enabled || isExempt(path, exempt)) return;
    const token = bearerToken(firstString(call, 'authorization'));
    if (!token) throw new OrchError(Errors.UNAUTHENTICATED, 'missing bearer token in metadata "authorization"');
    let principal: Principal;
    try {
      principal = await options.authenticator.authenticate(token, firstString(call, 'x-tenant-id'));
    } catch (err) {
      if (isOrchError(err)) throw err;
      // A verifier that failed unexpectedly has still not authenticated anyone.
      logger.warn({ err, method: path }, 'authenticator failed');
      throw new OrchError(Errors.UNAUTHENTICATED, 'invalid bearer token', { cause: err });
    }
    principals.set(call, principal);
  };
}

/** `handlers` with every method behind the auth gate, and thrown OrchErrors mapped to gRPC statuses. */
export function withAuth<T extends UntypedServiceImplementation>(
  definition: ServiceDefinition,
  handlers: T,
  options: GrpcAuthOptions,
  logger: Logger,
): T {
  return guardService(definition, handlers, { gate: authGate(options, logger), logger });
}
