// The Restate half of the workflow race (bench/workflow-race.ts): a service whose handler runs 10 sequential durable
// steps (`ctx.run`), each journaled by the Restate server before the next starts — the same shape as an orch
// workflow of 10 `update_blackboard` System states. Run as its own process: `tsx bench/restate/service.ts PORT`.
// It prints `listening <port>` once the endpoint accepts connections.
import * as restate from '@restatedev/restate-sdk';

// The Restate TS SDK calls Promise.withResolvers (Node 22+). Node 20 lacks it: without this polyfill every
// invocation fails inside the SDK and the server retries it forever.
const P = Promise as unknown as { withResolvers?: <T>() => { promise: Promise<T>; resolve: (v: T) => void; reject: (e: unknown) => void } };
if (typeof P.withResolvers !== 'function') {
  P.withResolvers = <T>() => {
    let resolve!: (v: T) => void;
    let reject!: (e: unknown) => void;
    const promise = new Promise<T>((res, rej) => {
      resolve = res;
      reject = rej;
    });
    return { promise, resolve, reject };
  };
}

export const STEPS = 10;

const race = restate.service({
  name: 'race',
  handlers: {
    /** 10 durable steps; each step's result (a small object, like a blackboard entry) is journaled. */
    run: async (ctx: restate.Context, input: { id: string }): Promise<{ id: string; steps: number }> => {
      let acc = 0;
      for (let i = 0; i < STEPS; i++) {
        const r = await ctx.run(`step-${i}`, () => ({ step: i, value: acc + 1 }));
        acc = r.value;
      }
      return { id: input.id, steps: acc };
    },
  },
});

const port = Number(process.argv[2] ?? 9080);
await restate.serve({ services: [race], port });
process.stdout.write(`listening ${port}\n`);
