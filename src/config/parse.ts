// YAML text → plain data. A syntax error becomes one ConfigError line with the source name, line and column;
// the yaml library's multi-line excerpt is dropped because the CLI prints exactly one line.
import { parseDocument } from 'yaml';
import { ConfigError } from './errors.ts';

export function parseConfigYaml(text: string, sourceName: string): unknown {
  const doc = parseDocument(text, { uniqueKeys: true, prettyErrors: true });
  const err = doc.errors[0];
  if (err) {
    const pos = err.linePos?.[0];
    const where = pos ? `${sourceName}:${pos.line}:${pos.col}` : sourceName;
    const reason = (err.message.split('\n')[0] ?? '').replace(/ at line \d+, column \d+:?$/, '').trim();
    throw new ConfigError(undefined, `${where}: invalid YAML: ${reason}`, { cause: err });
  }
  try {
    return doc.toJS({ maxAliasCount: 100 });
  } catch (cause) {
    // Alias bombs and similar structural problems surface here rather than as parse errors.
    throw new ConfigError(undefined, `${sourceName}: invalid YAML: ${(cause as Error).message}`, { cause });
  }
}
