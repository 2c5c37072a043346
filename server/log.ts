import { AsyncLocalStorage } from 'node:async_hooks';
import { format } from 'node:util';
import pino from 'pino';
import { env } from './env';
import { processSingleton } from './process-registry';

// The one logger of the web server and the workers (docs/deploy.md, "Metrics and logs").
// LOG_LEVEL drops what is below it; LOG_FORMAT picks the shape of a line:
// - text (the default): what the processes always printed. A module's line goes to the
//   console as before (console.warn(message, error)); a process may give its own line
//   format (the worker's one JSON-like line per event, scripts/worker.ts).
// - json: one JSON object a line on stdout, by pino: level, time, msg, the process's role
//   and pid, the request id of the request being handled (withRequest), then the fields.
//   captureConsole() turns what libraries and Next.js print through console into such lines.
// One state per process (server/process-registry.ts): the web server's copy of server/ and
// Next.js's bundles log through the same configuration and see the same request context.

export type LogLevel = 'debug' | 'info' | 'warn' | 'error';
/** A line's fields; `err`, an error, is printed with its stack (text) or serialized (json). */
export type LogFields = Record<string, unknown> & { err?: unknown };
/** Which kind of process writes the line. */
export type ProcessRole = 'web' | 'worker' | 'process';

const LEVELS: readonly LogLevel[] = ['debug', 'info', 'warn', 'error'];

interface LogState {
  role: ProcessRole;
  format: 'text' | 'json';
  minLevel: number;
  /** The process's own text line (the worker's); unset: the console, as before. */
  textLine: ((level: LogLevel, message: string, fields: LogFields | undefined) => string) | null;
  /** Fields of every json line besides role and pid (the worker's name). */
  fields: Record<string, unknown>;
  json: pino.Logger | null;
}

const state = (): LogState =>
  processSingleton('log.state', () => {
    const config = env();
    return { role: 'process', format: config.LOG_FORMAT, minLevel: LEVELS.indexOf(config.LOG_LEVEL), textLine: null, fields: {}, json: null };
  });

/** Each request's context while it is handled (web-server.ts), for every line logged meanwhile. */
const requests = processSingleton('log.requests', () => new AsyncLocalStorage<{ requestId: string }>());

/** Say which process this is, before it logs anything (scripts/web.ts, scripts/worker.ts). */
export function configureLogging(o: { role: ProcessRole; textLine?: LogState['textLine']; fields?: Record<string, unknown> }): void {
  const s = state();
  s.role = o.role;
  s.textLine = o.textLine ?? null;
  s.fields = o.fields ?? {};
  s.json = null;
}

export function logFormat(): 'text' | 'json' {
  return state().format;
}

function jsonLogger(s: LogState): pino.Logger {
  // Synchronous writes: a process that logs and then exits (a drain's last line) loses nothing.
  s.json ??= pino(
    {
      level: LEVELS[s.minLevel],
      base: { role: s.role, pid: process.pid, ...s.fields },
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
      mixin: () => {
        const request = requests.getStore();
        return request ? { requestId: request.requestId } : {};
      },
    },
    pino.destination({ fd: 1, sync: true }),
  );
  return s.json;
}

/** The console, unless captureConsole replaced it: kept so that text lines never loop back. */
const consoleOf = processSingleton('log.console', () => ({
  debug: console.debug.bind(console),
  info: console.info.bind(console),
  warn: console.warn.bind(console),
  error: console.error.bind(console),
}));

function write(level: LogLevel, message: string, fields?: LogFields): void {
  const s = state();
  if (LEVELS.indexOf(level) < s.minLevel) return;
  if (s.format === 'json') {
    jsonLogger(s)[level](fields ?? {}, message);
    return;
  }
  if (s.textLine) {
    process.stdout.write(`${s.textLine(level, message, fields)}\n`);
    return;
  }
  const { err, ...rest } = fields ?? {};
  const extra = [...(err !== undefined ? [err] : []), ...(Object.keys(rest).length > 0 ? [rest] : [])];
  consoleOf[level](message, ...extra);
}

export const log = {
  debug: (message: string, fields?: LogFields) => write('debug', message, fields),
  info: (message: string, fields?: LogFields) => write('info', message, fields),
  warn: (message: string, fields?: LogFields) => write('warn', message, fields),
  error: (message: string, fields?: LogFields) => write('error', message, fields),
};

/** Run `fn` as the handling of one request: every line it logs, however deep, carries the id. */
export function withRequest<T>(requestId: string, fn: () => T): T {
  return requests.run({ requestId }, fn);
}

/** The id of the request being handled, if any. */
export function currentRequestId(): string | undefined {
  return requests.getStore()?.requestId;
}

/**
 * In json format, what anything prints through console (Next.js, libraries, a module not
 * yet routed here) becomes a line of this logger too, so that every stdout line is JSON.
 */
export function captureConsole(): void {
  if (state().format !== 'json') return;
  const through = (level: LogLevel) => (...args: unknown[]) => {
    const err = args.find((a) => a instanceof Error);
    write(level, format(...args.filter((a) => a !== err)), err ? { err } : undefined);
  };
  console.log = through('info');
  console.info = through('info');
  console.debug = through('debug');
  console.warn = through('warn');
  console.error = through('error');
}
