// The one error the config loader throws. The CLI prints `message` as a single line and exits 2, so every
// message is one line that names the offending key (or environment variable) and what is wrong with it.
import { Errors, OrchError } from '../errors/catalog.ts';

export class ConfigError extends OrchError {
  /** The dotted config key (`spec.http.port`), environment variable (`ORCH_HTTP_PORT`) or override at fault. */
  readonly key: string | undefined;

  constructor(key: string | undefined, problem: string, options?: { cause?: unknown }) {
    super(Errors.CONFIG_INVALID, `config error: ${key === undefined ? '' : `${key}: `}${oneLine(problem)}`, options);
    this.name = 'ConfigError';
    this.key = key;
  }
}

function oneLine(text: string): string {
  return text.replace(/\s*\n\s*/g, ' ').trim();
}
