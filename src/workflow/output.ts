// output_template and output_schema of seed 002, applied when a workflow completes: each template value is rendered
// against the final scope, coerced by the type of the matching output_schema property, then the whole object is
// validated against the schema and becomes final_output. A failure names the field and the value; the engine fails
// the workflow with that error. Without a template there is no final output (null); without a schema every value
// stays a string.
import { compileWorkflowSchema, schemaErrors } from './input.ts';
import type { WorkflowManifest } from './manifest/types.ts';
import { renderTemplate } from './template/render.ts';
import type { TemplateScope } from './template/scope.ts';

const INTEGER = /^[+-]?\d+$/;
const NUMBER = /^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$/;

function propertyType(schema: Record<string, unknown> | undefined, field: string): string | undefined {
  const properties = schema?.properties as Record<string, { type?: unknown }> | undefined;
  const type = properties && Object.hasOwn(properties, field) ? properties[field]?.type : undefined;
  if (typeof type === 'string') return type;
  // ["integer", "null"]: coerce by the first non-null type.
  if (Array.isArray(type)) return type.find((t): t is string => typeof t === 'string' && t !== 'null');
  return undefined;
}

function valueText(value: string): string {
  return JSON.stringify(value.length > 200 ? `${value.slice(0, 200)}…` : value);
}

type Coerced = { ok: true; value: unknown } | { ok: false; error: string };

/** The seed's coercion table. Numbers, integers and booleans ignore surrounding whitespace (templates add newlines). */
export function coerceOutputValue(field: string, type: string | undefined, text: string): Coerced {
  const t = text.trim();
  const fail = (what: string): Coerced => ({ ok: false, error: `output field "${field}": value ${valueText(text)} is not ${what}` });
  switch (type) {
    case undefined:
    case 'string':
      return { ok: true, value: text };
    case 'integer': {
      const n = INTEGER.test(t) ? Number.parseInt(t, 10) : Number.NaN;
      return Number.isSafeInteger(n) ? { ok: true, value: n } : fail('an integer');
    }
    case 'number': {
      const n = NUMBER.test(t) ? Number.parseFloat(t) : Number.NaN;
      return Number.isFinite(n) ? { ok: true, value: n } : fail('a number');
    }
    case 'boolean':
      return { ok: true, value: t === 'true' };
    case 'object':
    case 'array': {
      let parsed: unknown;
      try {
        parsed = JSON.parse(t);
      } catch {
        return fail(`JSON (${type})`);
      }
      const isArray = Array.isArray(parsed);
      const isObject = parsed !== null && typeof parsed === 'object' && !isArray;
      if (type === 'array' ? !isArray : !isObject) return fail(`a JSON ${type}`);
      return { ok: true, value: parsed };
    }
    case 'null':
      return t === 'null' ? { ok: true, value: null } : fail('null');
    default:
      return { ok: true, value: text };
  }
}

export function renderFinalOutput(manifest: WorkflowManifest, scope: TemplateScope): { ok: true; value: unknown } | { ok: false; error: string } {
  const template = manifest.metadata.output_template;
  if (!template) return { ok: true, value: null };
  const schema = manifest.metadata.output_schema;
  const value: Record<string, unknown> = {};
  const rendered: Record<string, string> = {};
  for (const [field, source] of Object.entries(template)) {
    const text = renderTemplate(source, scope);
    rendered[field] = text;
    const coerced = coerceOutputValue(field, propertyType(schema, field), text);
    if (!coerced.ok) return coerced;
    value[field] = coerced.value;
  }
  if (!schema) return { ok: true, value };
  let validate;
  try {
    validate = compileWorkflowSchema(schema);
  } catch (err) {
    return { ok: false, error: `metadata.output_schema is not a valid schema: ${err instanceof Error ? err.message : String(err)}` };
  }
  if (validate(value)) return { ok: true, value };
  const errors = schemaErrors('output', validate.errors).map((e) => {
    const key = e.field.split('.')[1];
    const shown = key !== undefined && Object.hasOwn(rendered, key) ? ` (value ${valueText(rendered[key] as string)})` : '';
    return `${e.field}${shown} ${e.message}`;
  });
  return { ok: false, error: `final output does not match output_schema: ${errors.join('; ')}` };
}
