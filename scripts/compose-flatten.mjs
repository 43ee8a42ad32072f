#!/usr/bin/env node
// Merges Compose files with Compose's own rules into one file that podman-compose 1.0.3 (Debian bookworm) runs as
// Docker Compose would run the originals. That podman-compose concatenates every list when merging files (so an
// override's `command` or `entrypoint` is appended to the base's), ignores `profiles` and never mounts `configs`.
// Here: mappings merge key by key; `command`, `entrypoint`, `healthcheck.test` and other lists are replaced, except
// those Compose unions (ports, expose, security_opt, cap_add, cap_drop, dns, tmpfs, devices, and volumes by target);
// services whose profiles are not active (COMPOSE_PROFILES, comma-separated) are dropped with the depends_on entries
// naming them; `configs: [{source, target}]` of a file-backed config become read-only bind mounts. `${VAR}`
// interpolation is left to podman-compose.
//
//   node scripts/compose-flatten.mjs -f docker-compose.cluster.yml -f docker-compose.postgres.yml -o out.yml
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { parse, stringify } from 'yaml';

const files = [];
let out;
for (let i = 2; i < process.argv.length; i++) {
  const a = process.argv[i];
  if (a === '-f') files.push(process.argv[++i]);
  else if (a === '-o') out = process.argv[++i];
  else throw new Error(`unknown argument ${a}`);
}
if (files.length === 0 || !out) throw new Error('usage: compose-flatten.mjs -f FILE [-f FILE...] -o OUT');

const UNION = new Set(['ports', 'expose', 'security_opt', 'cap_add', 'cap_drop', 'dns', 'dns_search', 'tmpfs', 'devices', 'external_links']);
const isMap = (v) => v !== null && typeof v === 'object' && !Array.isArray(v);

/** environment/labels as a map (Compose allows `- KEY=value` lists). */
function asMap(v) {
  if (!Array.isArray(v)) return v;
  return Object.fromEntries(v.map((e) => { const i = String(e).indexOf('='); return i < 0 ? [e, null] : [e.slice(0, i), e.slice(i + 1)]; }));
}

const targetOf = (v) => (typeof v === 'string' ? v.split(':')[1] ?? v : v.target);

function merge(base, over, key) {
  if (key === 'environment' || key === 'labels') return { ...asMap(base), ...asMap(over) };
  if (key === 'volumes' && Array.isArray(base) && Array.isArray(over)) {
    const targets = new Set(over.map(targetOf));
    return [...base.filter((v) => !targets.has(targetOf(v))), ...over];
  }
  if (UNION.has(key) && Array.isArray(base) && Array.isArray(over)) return [...new Set([...base, ...over])];
  if (isMap(base) && isMap(over)) {
    const r = { ...base };
    for (const [k, v] of Object.entries(over)) r[k] = k in r ? merge(r[k], v, k) : v;
    return r;
  }
  return over;
}

let doc = {};
for (const f of files) {
  const text = readFileSync(f, 'utf8');
  const d = parse(text, { merge: true }) ?? {};
  // x-* extension fields only feed anchors; they are not part of the result.
  for (const k of Object.keys(d)) if (k.startsWith('x-')) delete d[k];
  doc = merge(doc, d, '');
}

const active = new Set((process.env.COMPOSE_PROFILES ?? '').split(',').filter(Boolean));
const services = doc.services ?? {};
for (const [name, svc] of Object.entries(services)) {
  if (Array.isArray(svc.profiles) && !svc.profiles.some((p) => active.has(p))) delete services[name];
}
const baseDir = path.dirname(path.resolve(files[0]));
for (const svc of Object.values(services)) {
  delete svc.profiles;
  if (isMap(svc.depends_on)) for (const dep of Object.keys(svc.depends_on)) if (!(dep in services)) delete svc.depends_on[dep];
  if (Array.isArray(svc.depends_on)) svc.depends_on = svc.depends_on.filter((d) => d in services);
  for (const c of svc.configs ?? []) {
    const source = typeof c === 'string' ? c : c.source;
    const target = typeof c === 'string' ? `/${c}` : c.target ?? `/${c.source}`;
    const file = doc.configs?.[source]?.file;
    if (!file) throw new Error(`config ${source}: only file-backed configs can be turned into mounts`);
    svc.volumes = [...(svc.volumes ?? []), `${path.resolve(baseDir, file)}:${target}:ro`];
  }
  delete svc.configs;
}
delete doc.configs;
// YAML 1.1 output: podman-compose reads with PyYAML, for which an unquoted no/yes/on/off is a boolean.
writeFileSync(out, stringify(doc, { lineWidth: 0, version: '1.1', aliasDuplicateObjects: false }));
