// The injected logger. Library code takes a Logger and makes children with context; only the CLI edge creates one.
import { pino, type Logger as PinoLogger, type LoggerOptions } from 'pino';

export type Logger = PinoLogger;

export interface LoggerConfig {
  level?: string;
  /** Write to this destination (a file descriptor or path); stdout by default. */
  destination?: number | string;
}

/** Keys whose values are replaced by "[redacted]" wherever they appear in a log line. */
export const REDACT_PATHS = [
  'authorization',
  'req.headers.authorization',
  'headers.authorization',
  '*.api_key',
  '*.password',
  '*.secret',
  '*.token',
  '*.private_key',
];

export function createLogger(config: LoggerConfig = {}): Logger {
  const options: LoggerOptions = {
    level: config.level ?? 'info',
    redact: { paths: REDACT_PATHS, censor: '[redacted]' },
    base: { pid: process.pid },
  };
  const dest = config.destination ?? 1;
  return pino(options, pino.destination({ dest, sync: false }));
}

/** A logger that drops everything, for tests that do not read logs. */
export function silentLogger(): Logger {
  return pino({ level: 'silent' });
}
