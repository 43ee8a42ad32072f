// In-process microbench (labelled as such): CPU and wall time to serialize a 1 MiB FSAL WriteRequest with the
// generated encoder against src/fsal/wire.ts's sized one, three interleaved rounds of 300. Run: tsx bench/fsal-encode.ts
import { FsalServiceService, WriteRequest } from '../src/gen/orch/fsal/v1/fsal.js';
import { FSAL_DEFINITION } from '../src/fsal/wire.ts';
const m: WriteRequest = { execution_id: '6f1c1f8e-4a53-4a0e-9d36-8f5f8a1b2c3d', volume_id: '0b7e2a44-91c2-4d8e-a1f0-3c2b1a0f9e8d', path: 'big.bin', offset: 7 << 20, data: Buffer.alloc(1 << 20, 7) };
function run(name: string, f: (x: WriteRequest) => Buffer, n: number) {
  const t0 = performance.now(); const c0 = process.cpuUsage();
  for (let i = 0; i < n; i++) f(m);
  const c = process.cpuUsage(c0);
  return `${name} ${((performance.now() - t0) / n).toFixed(3)} ms wall, ${((c.user + c.system) / 1000 / n).toFixed(3)} ms cpu per 1 MiB message`;
}
for (let r = 0; r < 3; r++) {
  console.log(run('generated', FsalServiceService.write.requestSerialize, 300));
  console.log(run('sized    ', FSAL_DEFINITION.write.requestSerialize, 300));
}
process.exit(0);
