// The Ajv for schemas that tenants write (input schemas, validation schemas): the same options as before, and
// their `pattern`/`patternProperties` regular expressions guarded (./safe-pattern.ts) so that none can stall the
// event loop when it runs.
import { Ajv, type Options } from 'ajv';
import { guardedRegExp } from './safe-pattern.ts';

// `code` names the function only for ajv's standalone code generation, which orch does not use.
const regExp = Object.assign((pattern: string, flags: string) => guardedRegExp(pattern, flags), { code: 'guardedRegExp' });

export function tenantAjv(options: Options = {}): Ajv {
  return new Ajv({ ...options, code: { ...options.code, regExp } });
}
