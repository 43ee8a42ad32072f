// input_schema of seed 002: the caller's payload is validated before an execution is created (HTTP 422 with these
// errors, nothing written). JSON Schema draft-07 with ajv: string, number/integer, boolean, enum, nested objects
// and arrays, required, formats. No schema accepts any payload; no payload is validated as `{}`.
import type { ErrorObject, ValidateFunction } from 'ajv';
import { tenantAjv } from '../util/tenant-ajv.ts';
import addFormatsImport, { type FormatsPlugin } from 'ajv-formats';
import type { WorkflowManifest } from './manifest/types.ts';

export interface SchemaError {
  /** `input.KEY.SUB` (or `output.KEY`), the place in the document. */
  field: string;
  message: string;
}

const addFormats = addFormatsImport as unknown as FormatsPlugin;
const ajv = tenantAjv({ allErrors: true, strict: false });
addFormats(ajv);

// Manifests are parsed once per deploy and reused for every run: compile each schema object once.
const compiled = new WeakMap<object, ValidateFunction>();

/** Compiles (once per schema object) with the workflow Ajv; throws when the schema itself is invalid. */
export function compileWorkflowSchema(schema: Record<string, unknown>): ValidateFunction {
  let fn = compiled.get(schema);
  if (!fn) {
    fn = ajv.compile(schema);
    compiled.set(schema, fn);
  }
  return fn;
}

/** Ajv errors as `{field, message}` rooted at `root` (`input` or `output`). */
export function schemaErrors(root: string, errors: ErrorObject[] | null | undefined): SchemaError[] {
  return (errors ?? []).map((e) => {
    const base = e.instancePath === '' ? root : `${root}${e.instancePath.replaceAll('/', '.')}`;
    const params = e.params as { missingProperty?: string; additionalProperty?: string; allowedValues?: unknown[] };
    if (params.missingProperty !== undefined) return { field: `${base}.${params.missingProperty}`, message: 'is required' };
    if (params.additionalProperty !== undefined) return { field: `${base}.${params.additionalProperty}`, message: 'is not an allowed property' };
    if (params.allowedValues !== undefined) return { field: base, message: `must be one of ${params.allowedValues.map((v) => JSON.stringify(v)).join(', ')}` };
    return { field: base, message: e.message ?? 'is invalid' };
  });
}

export function validateWorkflowInput(manifest: WorkflowManifest, input: unknown): { ok: true } | { ok: false; errors: SchemaError[] } {
  const schema = manifest.metadata.input_schema;
  if (!schema) return { ok: true };
  let validate: ValidateFunction;
  try {
    validate = compileWorkflowSchema(schema);
  } catch (err) {
    return { ok: false, errors: [{ field: 'metadata.input_schema', message: `invalid schema: ${err instanceof Error ? err.message : String(err)}` }] };
  }
  if (validate(input ?? {})) return { ok: true };
  return { ok: false, errors: schemaErrors('input', validate.errors) };
}
