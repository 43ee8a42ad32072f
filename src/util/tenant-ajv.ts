// The Ajv for schemas that tenants write (input schemas, validation schemas): the same options as before, and
// their `pattern`/`patternProperties` regular expressions compiled for RE2's linear-time engine (./linear-regexp.ts),
// so that none can stall the event loop when it validates a payload (`(a+)+$`, `(a|aa)+$`). A pattern RE2 cannot
// run is refused when the schema compiles, so at deploy.
import { Ajv, type Options } from 'ajv';
import { linearRegExp } from './linear-regexp.ts';

// `code` names the function only for ajv's standalone code generation, which orch does not use.
const regExp = Object.assign((pattern: string, flags: string) => linearRegExp(pattern, flags), { code: 'linearRegExp' });

export function tenantAjv(options: Options = {}): Ajv {
  return new Ajv({ ...options, code: { ...options.code, regExp } });
}
