// The request validators of the HTTP routes, compiled when first used or by warm() once the node is up, not while
// the app is built. fastify compiles every route's schemas (body, query string, path parameters: ~120 of them)
// with ajv when the app becomes ready, and that was the largest part of building it: ~0.4 s of a node start's CPU,
// a quarter of it ajv's meta-schema (issue 15 item 4: start-up). The validators are the ones fastify would make —
// its own compiler (@fastify/ajv-compiler) with the app's ajv options — only later: node.ts calls warm() after the
// banner, which compiles the rest a route at a time between requests, so the first requests after a start do not
// each pay for theirs.
import AjvCompiler from '@fastify/ajv-compiler';
import type { FastifySchemaValidationError, FastifyServerOptions } from 'fastify';

type CompilersFactory = NonNullable<NonNullable<FastifyServerOptions['schemaController']>['compilersFactory']>;
type BuildValidator = NonNullable<CompilersFactory['buildValidator']>;

/** What fastify hands the compiler for one part of one route. */
interface RouteSchemaDef {
  schema: unknown;
  method: string;
  url: string;
  httpPart?: string;
}

/** What fastify calls: ajv's validate function (errors after a failure; schemaEnv when it may set defaults). */
type Validate = ((data: unknown, ctx?: unknown) => unknown) & { errors?: FastifySchemaValidationError[] | null; schemaEnv?: unknown };

export interface LazyValidators {
  /** fastify's `schemaController.compilersFactory` for the app. */
  readonly compilersFactory: CompilersFactory;
  /** How many validators are not compiled yet. */
  pending(): number;
  /** Compiles every validator not compiled yet, one per turn of the event loop; rejects on a schema ajv refuses. */
  warm(): Promise<void>;
}

export function lazyValidators(): LazyValidators {
  const fastifys = AjvCompiler();
  const pending = new Set<() => Validate>();
  const buildValidator = ((externalSchemas: unknown, options: unknown) => {
    const build = (fastifys as (e: unknown, o: unknown) => (def: RouteSchemaDef) => Validate)(externalSchemas, options);
    return (def: RouteSchemaDef) => {
      let compiled: Validate | undefined;
      const compile = (): Validate => {
        if (!compiled) {
          compiled = build(def);
          pending.delete(compile);
        }
        return compiled;
      };
      pending.add(compile);
      const validate = ((data: unknown, ctx?: unknown) => compile()(data, ctx)) as Validate;
      // fastify reads these around a call: schemaEnv before (it then passes the parent so defaults can be set),
      // errors after a failure.
      Object.defineProperty(validate, 'schemaEnv', { get: () => compile().schemaEnv });
      Object.defineProperty(validate, 'errors', { get: () => compiled?.errors });
      return validate;
    };
  }) as unknown as BuildValidator;
  return {
    compilersFactory: { buildValidator },
    pending: () => pending.size,
    warm: async () => {
      for (const compile of [...pending]) {
        await new Promise((resolve) => setImmediate(resolve));
        compile();
      }
    },
  };
}
