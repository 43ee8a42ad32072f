// Small TypeBox helpers shared by the config and manifest schemas (issue 19, "one definition per shape"): each
// schema is written once in TypeBox and gives the JSON Schema ajv compiles, the TypeScript type (Static<>) and the
// document served to clients. These helpers keep the JSON Schema exactly as it was hand-written before, where
// TypeBox's own form would change what ajv reports: `enum` instead of an anyOf of literals (one "must be one of"
// message), `type: [a, b]` instead of anyOf (one "must be string or number" message), and plain
// `additionalProperties` maps instead of TypeBox's catch-all patternProperties.
import { Type, type SchemaOptions, type Static, type TObject, type TSchema, type TUnsafe } from '@sinclair/typebox';

/** `{ enum: values }`, typed as the union of the values. */
export function Enum<const T extends readonly (string | number)[]>(values: T, options: SchemaOptions = {}): TUnsafe<T[number]> {
  return Type.Unsafe<T[number]>({ ...options, enum: [...values] });
}

/** A free-form mapping `{ type: 'object' }` (its own owner checks its shape). */
export function FreeObject(options: SchemaOptions = {}): TUnsafe<Record<string, unknown>> {
  return Type.Unsafe<Record<string, unknown>>({ ...options, type: 'object' });
}

/** A map of string values: `{ type: 'object', additionalProperties: { type: 'string' } }`. */
export function StringMap(options: SchemaOptions = {}): TUnsafe<Record<string, string>> {
  return Type.Unsafe<Record<string, string>>({ ...options, type: 'object', additionalProperties: { type: 'string' } });
}

/** A map whose values all have one schema. */
export function MapOf<T extends TSchema>(values: T, options: SchemaOptions = {}): TUnsafe<Record<string, Static<T>>> {
  return Type.Unsafe<Record<string, Static<T>>>({ ...options, type: 'object', additionalProperties: values });
}

/** `{ type: ['string', 'number'] }` and the like: one value of several JSON types, typed as their union. */
export function Types<T>(types: readonly ('string' | 'number' | 'integer' | 'boolean' | 'object')[], options: SchemaOptions = {}): TUnsafe<T> {
  return Type.Unsafe<T>({ ...options, type: [...types] });
}

/** `{ const: value }` without TypeBox's added `type` (which would report "must be string" before "must be <value>"). */
export function Const<const T extends string | number | boolean>(value: T, options: SchemaOptions = {}): TUnsafe<T> {
  return Type.Unsafe<T>({ ...options, const: value });
}

/**
 * One object of several kinds told apart by `key` (a validation rule's `type`, a workflow state's `kind`): written as
 * `allOf` of `if key = value then <that kind's closed object>`, so ajv reports the problems of the kind the document
 * names rather than of every branch an anyOf would try. The type is the union of the kinds.
 */
export function Discriminated<K extends string, V extends Record<string, TObject>>(
  key: K,
  variants: V,
  options: SchemaOptions & { required?: string[] } = {},
): TUnsafe<Static<V[keyof V]>> {
  const values = Object.keys(variants);
  return Type.Unsafe<Static<V[keyof V]>>({
    type: 'object',
    required: [key],
    properties: { [key]: { enum: values } },
    ...options,
    allOf: Object.entries(variants).map(([value, then]) => ({ if: { properties: { [key]: { const: value } }, required: [key] }, then })),
  });
}
