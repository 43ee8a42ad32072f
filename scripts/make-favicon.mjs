// Writes ui/public/favicon.ico (served at /favicon.ico and /ui/favicon.ico): a 32x32 PNG inside an ICO container,
// drawn here so the icon has a source anyone can change and re-run (`node scripts/make-favicon.mjs`).
// The motif: three states of a workflow joined by transitions, white on the dashboard's header colour.
import { deflateSync } from 'node:zlib';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const N = 32;
const px = new Uint8Array(N * N * 4);
const bg = [0x1d, 0x24, 0x30];
const dot = [0x5b, 0x9b, 0xff];
const fg = [0xe9, 0xed, 0xf3];
function set(x, y, c, a = 255) {
  const i = (y * N + x) * 4;
  px[i] = c[0]; px[i + 1] = c[1]; px[i + 2] = c[2]; px[i + 3] = a;
}
const inRounded = (x, y, r) => {
  const cx = Math.min(Math.max(x, r), N - 1 - r);
  const cy = Math.min(Math.max(y, r), N - 1 - r);
  return (x - cx) ** 2 + (y - cy) ** 2 <= r * r;
};
const segDist = (x, y, ax, ay, bx, by) => {
  const t = Math.max(0, Math.min(1, ((x - ax) * (bx - ax) + (y - ay) * (by - ay)) / ((bx - ax) ** 2 + (by - ay) ** 2)));
  return Math.hypot(x - (ax + t * (bx - ax)), y - (ay + t * (by - ay)));
};
const nodes = [[8, 9], [23, 9], [15.5, 23]];
for (let y = 0; y < N; y++)
  for (let x = 0; x < N; x++) {
    if (!inRounded(x + 0.5, y + 0.5, 6)) continue;
    set(x, y, bg);
    const cx = x + 0.5, cy = y + 0.5;
    if (segDist(cx, cy, ...nodes[0], ...nodes[1]) < 1.3 || segDist(cx, cy, ...nodes[1], ...nodes[2]) < 1.3 || segDist(cx, cy, ...nodes[2], ...nodes[0]) < 1.3) set(x, y, fg);
    for (const [i, [nx, ny]] of nodes.entries()) if (Math.hypot(cx - nx, cy - ny) < 4.2) set(x, y, i === 2 ? dot : fg);
  }

const crcTable = Array.from({ length: 256 }, (_, n) => {
  let c = n;
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  return c >>> 0;
});
const crc = (buf) => {
  let c = 0xffffffff;
  for (const b of buf) c = crcTable[(c ^ b) & 0xff] ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
};
const chunk = (type, data) => {
  const out = Buffer.alloc(12 + data.length);
  out.writeUInt32BE(data.length, 0);
  out.write(type, 4, 'ascii');
  data.copy(out, 8);
  out.writeUInt32BE(crc(out.subarray(4, 8 + data.length)), 8 + data.length);
  return out;
};
const ihdr = Buffer.alloc(13);
ihdr.writeUInt32BE(N, 0); ihdr.writeUInt32BE(N, 4); ihdr[8] = 8; ihdr[9] = 6; // 8-bit RGBA
const raw = Buffer.alloc(N * (N * 4 + 1));
for (let y = 0; y < N; y++) Buffer.from(px.buffer, y * N * 4, N * 4).copy(raw, y * (N * 4 + 1) + 1);
const png = Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), chunk('IHDR', ihdr), chunk('IDAT', deflateSync(raw, { level: 9 })), chunk('IEND', Buffer.alloc(0))]);

const header = Buffer.alloc(22);
header.writeUInt16LE(0, 0); header.writeUInt16LE(1, 2); header.writeUInt16LE(1, 4); // one image
header[6] = N; header[7] = N; header[8] = 0; header[9] = 0;
header.writeUInt16LE(1, 10); header.writeUInt16LE(32, 12);
header.writeUInt32LE(png.length, 14); header.writeUInt32LE(22, 18);
const out = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../ui/public/favicon.ico');
writeFileSync(out, Buffer.concat([header, png]));
console.log(`wrote ${out} (${22 + png.length} bytes)`);
