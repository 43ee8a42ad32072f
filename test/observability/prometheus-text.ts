// A strict reader of the Prometheus text exposition format 0.0.4 for tests: every line is a `# HELP`, a `# TYPE`,
// or a sample `name{label="value",...} value [timestamp]`; names and label names follow the format's grammar, label
// values use only the allowed escapes, values are floats (or NaN, +Inf, -Inf); a family's TYPE comes before its
// samples and is given once; histogram buckets are cumulative and end with le="+Inf" equal to _count.
export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

export interface Exposition {
  types: Map<string, string>;
  samples: Sample[];
}

const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/;
const TYPES = new Set(['counter', 'gauge', 'histogram', 'summary', 'untyped']);

function parseValue(v: string, line: string): number {
  if (v === 'NaN') return Number.NaN;
  if (v === '+Inf') return Number.POSITIVE_INFINITY;
  if (v === '-Inf') return Number.NEGATIVE_INFINITY;
  if (!/^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/.test(v)) throw new Error(`bad value "${v}" in: ${line}`);
  return Number(v);
}

function parseLabels(s: string, line: string): Record<string, string> {
  const out: Record<string, string> = {};
  let i = 0;
  while (i < s.length) {
    const eq = s.indexOf('=', i);
    if (eq < 0) throw new Error(`bad labels in: ${line}`);
    const name = s.slice(i, eq);
    if (!LABEL_NAME.test(name)) throw new Error(`bad label name "${name}" in: ${line}`);
    if (s[eq + 1] !== '"') throw new Error(`label value not quoted in: ${line}`);
    let j = eq + 2;
    let value = '';
    for (;;) {
      const c = s[j];
      if (c === undefined) throw new Error(`unterminated label value in: ${line}`);
      if (c === '"') break;
      if (c === '\\') {
        const n = s[j + 1];
        if (n === 'n') value += '\n';
        else if (n === '\\' || n === '"') value += n;
        else throw new Error(`bad escape \\${n} in: ${line}`);
        j += 2;
        continue;
      }
      value += c;
      j++;
    }
    if (name in out) throw new Error(`duplicate label ${name} in: ${line}`);
    out[name] = value;
    i = j + 1;
    if (s[i] === ',') i++;
    else if (i < s.length) throw new Error(`expected , between labels in: ${line}`);
  }
  return out;
}

function familyOf(name: string, types: Map<string, string>): string | undefined {
  if (types.has(name)) return name;
  for (const suffix of ['_bucket', '_sum', '_count', '_total']) {
    if (name.endsWith(suffix) && types.has(name.slice(0, -suffix.length))) return name.slice(0, -suffix.length);
  }
  return undefined;
}

export function parsePrometheusText(text: string): Exposition {
  const types = new Map<string, string>();
  const samples: Sample[] = [];
  if (text.length > 0 && !text.endsWith('\n')) throw new Error('the exposition must end with a newline');
  for (const line of text.split('\n')) {
    if (line === '') continue;
    if (line.startsWith('#')) {
      const m = /^# (HELP|TYPE) (\S+) ?(.*)$/.exec(line);
      if (!m) {
        if (/^# (HELP|TYPE)/.test(line)) throw new Error(`bad comment line: ${line}`);
        continue; // other comments are allowed
      }
      const [, kind, name, rest] = m;
      if (!NAME.test(name!)) throw new Error(`bad metric name in: ${line}`);
      if (kind === 'TYPE') {
        if (!TYPES.has(rest!)) throw new Error(`bad type in: ${line}`);
        if (types.has(name!)) throw new Error(`TYPE given twice for ${name}`);
        if (samples.some((s) => familyOf(s.name, new Map([[name!, rest!]])) === name)) throw new Error(`TYPE of ${name} after its samples`);
        types.set(name!, rest!);
      }
      continue;
    }
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)(?: (-?\d+))?$/.exec(line);
    if (!m) throw new Error(`bad sample line: ${line}`);
    samples.push({ name: m[1]!, labels: m[2] ? parseLabels(m[2], line) : {}, value: parseValue(m[3]!, line) });
  }
  // Histograms: cumulative buckets ending in +Inf, equal to _count, for each label set.
  for (const [family, type] of types) {
    if (type !== 'histogram') continue;
    const groups = new Map<string, Sample[]>();
    for (const s of samples.filter((x) => x.name === `${family}_bucket`)) {
      const { le, ...rest } = s.labels;
      if (le === undefined) throw new Error(`${family}_bucket without le`);
      const key = JSON.stringify(Object.entries(rest).sort());
      groups.set(key, [...(groups.get(key) ?? []), s]);
    }
    for (const [key, buckets] of groups) {
      let prev = -1;
      for (const b of buckets) {
        if (b.value < prev) throw new Error(`${family} buckets are not cumulative (${key})`);
        prev = b.value;
      }
      const last = buckets[buckets.length - 1]!;
      if (last.labels.le !== '+Inf') throw new Error(`${family} buckets do not end with le="+Inf" (${key})`);
      const count = samples.find((x) => x.name === `${family}_count` && JSON.stringify(Object.entries(x.labels).sort()) === key);
      if (!count || count.value !== last.value) throw new Error(`${family}_count differs from its +Inf bucket (${key})`);
    }
  }
  return { types, samples };
}

/** The value of the sample `name` whose labels include `labels`; 0 when there is none (a counter not yet moved). */
export function valueOf(e: Exposition, name: string, labels: Record<string, string> = {}): number {
  const found = e.samples.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));
  return found.reduce((sum, s) => sum + s.value, 0);
}
