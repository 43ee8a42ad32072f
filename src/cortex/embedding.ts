// Text embeddings for Cortex (docs/CORTEX.md "Embeddings"). The default is local, deterministic and needs no model
// download: the text is normalised (lower case; UUIDs, hex, numbers, paths and URLs become placeholder tokens so
// "file /a/b.py line 12" and "file /c/d.py line 40" read the same), then word unigrams, word bigrams and character
// 3- to 5-grams of each word, and each quoted name as a whole, are hashed (FNV-1a, with a sign bit from a second hash to cancel collisions on
// average) into a fixed-size vector, which is L2-normalised. Cosine similarity is then a dot product.
// With `cortex.embedding.type: openai` an OpenAI-compatible /embeddings endpoint is used instead.
import type OpenAI from 'openai';
import { loadOpenAi } from '../agents/llm/sdks.ts';
import type { CortexConfig } from '../config/types.ts';

export interface EmbeddingProvider {
  /** Names the model; vectors of different models are never compared (stored with each row). */
  readonly model: string;
  embed(texts: string[]): Promise<number[][]>;
}

const STOPWORDS = new Set(
  'a an the of to in on at for and or is are was were be been by with from as it its this that these those into not no can could cannot has have had when while than then'.split(' '),
);

/** Lower-cases and replaces volatile details with placeholder tokens. */
export function normalizeText(text: string): string {
  return (
    text
      // camelCase and PascalCase words also count as their parts ("TypeError" → "type error typeerror").
      .replace(/\b([A-Z]?[a-z]+)([A-Z][a-z]+)+\b/g, (w) => `${w} ${w.replace(/([a-z])([A-Z])/g, '$1 $2')}`)
      .toLowerCase()
      .replace(/\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b/g, ' tokuuid ')
      .replace(/\bhttps?:\/\/\S+/g, ' tokurl ')
      // Paths: keep the file's extension, which often names the language ("path ext_py").
      .replace(/(?:[a-z]:)?(?:[\\/][\w.@+-]+){2,}|(?:\.{1,2}[\\/])[\w.@/+-]+/g, (p) => {
        const ext = /\.([a-z0-9]{1,6})$/.exec(p)?.[1];
        return ext ? ` tokpath ext_${ext} ` : ' tokpath ';
      })
      .replace(/\b0x[0-9a-f]+\b|\b(?=[0-9a-f]*[0-9])(?=[0-9a-f]*[a-f])[0-9a-f]{8,}\b/g, ' tokhex ')
      .replace(/\b\d+(?:\.\d+)*\b/g, ' toknum ')
  );
}

export function tokenize(text: string): string[] {
  return normalizeText(text)
    .split(/[^a-z0-9_]+/)
    .filter((w) => w.length > 0 && !STOPWORDS.has(w));
}

function fnv1a(s: string, seed: number): number {
  let h = seed >>> 0;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

function add(vec: Float64Array, feature: string, weight: number): void {
  const h = fnv1a(feature, 0x811c9dc5);
  const sign = fnv1a(feature, 0x9747b28c) & 1 ? 1 : -1;
  vec[h % vec.length]! += sign * weight;
}

export function l2normalize(v: ArrayLike<number>): number[] {
  let norm = 0;
  for (let i = 0; i < v.length; i++) norm += v[i]! * v[i]!;
  norm = Math.sqrt(norm);
  const out = new Array<number>(v.length);
  for (let i = 0; i < v.length; i++) out[i] = norm > 0 ? v[i]! / norm : 0;
  return out;
}

/** Cosine similarity of two L2-normalised vectors of one model (0 when the lengths differ). */
export function cosine(a: readonly number[], b: readonly number[]): number {
  if (a.length !== b.length) return 0;
  let dot = 0;
  for (let i = 0; i < a.length; i++) dot += a[i]! * b[i]!;
  return dot;
}

/** The local embedding of one text (see the header). Word features weigh more than character grams. */
export function localEmbedding(text: string, dimensions: number): number[] {
  const vec = new Float64Array(dimensions);
  // Quoted names ('requests', "users_email_key", `v`) are what tells two errors of one kind apart (which module is
  // missing, which key): they weigh extra.
  for (const m of text.matchAll(/'([^'\n]{1,80})'|"([^"\n]{1,80})"|`([^`\n]{1,80})`/g)) {
    const q = tokenize(m[1] ?? m[2] ?? m[3] ?? '').join(' ');
    if (q) add(vec, `q:${q}`, 3.5);
  }
  const words = tokenize(text);
  for (let i = 0; i < words.length; i++) {
    const w = words[i]!;
    add(vec, `w:${w}`, 1);
    if (i + 1 < words.length) add(vec, `b:${w} ${words[i + 1]!}`, 0.7);
    if (w.startsWith('tok') || w.startsWith('ext_')) continue;
    const padded = `<${w}>`;
    for (let n = 3; n <= 5; n++) {
      for (let j = 0; j + n <= padded.length; j++) add(vec, `c:${padded.slice(j, j + n)}`, 0.25);
    }
  }
  return l2normalize(vec);
}

export class LocalEmbeddingProvider implements EmbeddingProvider {
  readonly model: string;

  constructor(private readonly dimensions = 512) {
    this.model = `local-hash-v1-${dimensions}`;
  }

  async embed(texts: string[]): Promise<number[][]> {
    return texts.map((t) => localEmbedding(t, this.dimensions));
  }
}

/** An OpenAI-compatible POST /embeddings endpoint through the official `openai` client. */
export class OpenAiEmbeddingProvider implements EmbeddingProvider {
  readonly model: string;
  private client: Promise<OpenAI> | undefined;

  constructor(private readonly opts: { endpoint?: string | undefined; apiKey?: string | undefined; model?: string | undefined; dimensions?: number | undefined }) {
    this.model = opts.model ?? 'text-embedding-3-small';
    this.dims = opts.dimensions;
  }

  /** Made on the first call: the SDK loads lazily (agents/llm/sdks.ts). */
  private sdkClient(): Promise<OpenAI> {
    const { apiKey, endpoint } = this.opts;
    return (this.client ??= loadOpenAi().then((OpenAiSdk) => new OpenAiSdk({ apiKey: apiKey ?? 'unset', ...(endpoint ? { baseURL: endpoint } : {}), maxRetries: 2, timeout: 30_000 })));
  }

  private readonly dims: number | undefined;

  async embed(texts: string[]): Promise<number[][]> {
    if (texts.length === 0) return [];
    const res = await (await this.sdkClient()).embeddings.create({ model: this.model, input: texts, ...(this.dims ? { dimensions: this.dims } : {}) });
    const out = new Array<number[]>(texts.length);
    for (const d of res.data) out[d.index] = l2normalize(d.embedding);
    if (out.some((v) => v === undefined)) throw new Error('the embeddings endpoint answered fewer vectors than texts');
    return out;
  }
}

export function embeddingProviderFromConfig(cfg: CortexConfig): EmbeddingProvider {
  const e = cfg.embedding;
  if (e?.type === 'openai') return new OpenAiEmbeddingProvider({ endpoint: e.endpoint, apiKey: e.api_key, model: e.model, dimensions: e.dimensions });
  return new LocalEmbeddingProvider(e?.dimensions ?? 512);
}
