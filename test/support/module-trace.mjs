// `node --import ./test/support/module-trace.mjs …` with ORCH_MODULE_TRACE=<file>: appends the URL of every module
// the process resolves to <file>, one a line, so a test can see which code a bin really ran (dist/ or src/).
import { register } from 'node:module';

if (process.env.ORCH_MODULE_TRACE) {
  register('./module-trace-hooks.mjs', import.meta.url, { data: { file: process.env.ORCH_MODULE_TRACE } });
}
