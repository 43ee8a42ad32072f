// Counts ajv schema compilations while a function runs (the start-up tests of issue 15 item 4: a schema compiled at
// module load, at app build or per config load is CPU every node start pays). It patches compile() on the base class
// of every Ajv (draft-07, 2019, 2020; getSchema() compiles through it too) and restores it after.
import { Ajv } from 'ajv';

/** `fn`'s value and the stack of each compilation made while it ran (sync or async). */
export async function ajvCompilations<T>(fn: () => T | Promise<T>): Promise<{ value: T; stacks: string[] }> {
  const core = Object.getPrototypeOf(Ajv.prototype) as { compile: (...a: unknown[]) => unknown };
  const compile = core.compile;
  const stacks: string[] = [];
  core.compile = function (this: unknown, ...args: unknown[]) {
    stacks.push(new Error('ajv compile').stack ?? '');
    return compile.apply(this, args);
  };
  try {
    return { value: await fn(), stacks };
  } finally {
    core.compile = compile;
  }
}
