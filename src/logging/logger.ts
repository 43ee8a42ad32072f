// The injected logger. Library code takes a Logger and makes children with context; only the CLI edge creates one.
import { pino, type Logger as PinoLogger, type LoggerOptions } from 'pino';
import { activeTraceIds } from '../observability/tracing.ts';

export type Logger = PinoLogger;

export interface LoggerConfig {
  level?: string;
  /** Write to this destination (a file descriptor or path); stdout by default. */
  destination?: number | string;
}

/** Names of fields that hold secrets: their values never reach a log line. */
const SECRET_KEYS = ['api_key', 'apiKey', 'password', 'secret', 'secret_key', 'token', 'private_key', 'authorization'];

/**
 * Where those fields are censored: at the top of a log call's object and one or two objects down (pino's redaction
 * matches fixed depths; `*.token` alone let a top-level `{token}` through).
 */
export const REDACT_PATHS = [
  'req.headers.authorization',
  'headers.authorization',
  ...SECRET_KEYS,
  ...SECRET_KEYS.map((k) => `*.${k}`),
  ...SECRET_KEYS.map((k) => `*.*.${k}`),
];

export function createLogger(config: LoggerConfig = {}): Logger {
  const options: LoggerOptions = {
    level: config.level ?? 'info',
    redact: { paths: REDACT_PATHS, censor: '[redacted]' },
    base: { pid: process.pid },
    // trace_id and span_id of the active span (when tracing is on), so a log line can be found from its trace.
    mixin: activeTraceIds,
  };
  const dest = config.destination ?? 1;
  return pino(options, pino.destination({ dest, sync: false }));
}

/** A logger that drops everything, for tests that do not read logs. */
export function silentLogger(): Logger {
  return pino({ level: 'silent' });
}
