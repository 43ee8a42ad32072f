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

/**
 * Fields of an error object that carry what a caller sent, not what went wrong: a database error from PGlite holds
 * the statement's parameters (`params`: a webhook's whole body and headers, a run's input), others a request
 * `body` or `headers`. An error log line keeps the error's type, message, code and stack, never these.
 */
const CALLER_DATA_KEYS = new Set(['params', 'parameters', 'values', 'queryOptions', 'body', 'rawBody', 'headers', 'request', 'input']);

/** pino's error serializer without CALLER_DATA_KEYS, also in nested errors (`cause`, aggregate errors). */
export function serializeError(err: unknown): unknown {
  const out = pino.stdSerializers.err(err as Error) as unknown;
  const strip = (v: unknown, depth: number): unknown => {
    if (depth > 4 || typeof v !== 'object' || v === null) return v;
    for (const key of Object.keys(v)) {
      if (CALLER_DATA_KEYS.has(key)) (v as Record<string, unknown>)[key] = '[redacted]';
      else strip((v as Record<string, unknown>)[key], depth + 1);
    }
    return v;
  };
  return strip(out, 0);
}

export function createLogger(config: LoggerConfig = {}): Logger {
  const options: LoggerOptions = {
    level: config.level ?? 'info',
    redact: { paths: REDACT_PATHS, censor: '[redacted]' },
    serializers: { err: serializeError, error: serializeError },
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
