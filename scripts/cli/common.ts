import { parseArgs } from 'node:util';
import type { z } from 'zod';
import type { AuditActor } from '../../server/auth/admin';
import { closeDb, createDb, type Db } from '../../server/db';
import { parseEnv } from '../../server/env';
import { commandDatabase } from '../database';

// What every CLI command shares: strict option parsing, the database it acts on, and
// where messages for people go (stderr; stdout is for what a script may capture).

/** Wrong usage: one line on stderr, exit code 2. */
export class UsageError extends Error {
  override name = 'UsageError';
}

const OPTIONS = {
  email: { type: 'string' },
  password: { type: 'string' },
  project: { type: 'string' },
  role: { type: 'string' },
  name: { type: 'string' },
  id: { type: 'string' },
  prefix: { type: 'string' },
  force: { type: 'boolean' },
  concurrency: { type: 'string' },
  'reset-password': { type: 'boolean' },
} as const;

/** Options of a command, parsed strictly (unknown or misspelled options are errors) and validated. */
export function optionsOf<T extends z.ZodType>(command: string, argv: string[], schema: T, allowed: (keyof typeof OPTIONS)[]): z.infer<T> {
  let values: Record<string, unknown>;
  try {
    const options = Object.fromEntries(allowed.map((name) => [name, OPTIONS[name]]));
    values = parseArgs({ args: argv, options, strict: true, allowPositionals: false }).values;
  } catch (error) {
    throw new UsageError(`${command}: ${(error as Error).message.split('\n')[0]}`);
  }
  const parsed = schema.safeParse(values);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const option = issue.path.length > 0 ? `--${issue.path.join('.')} ` : '';
    const missing = issue.path.length > 0 && values[String(issue.path[0])] === undefined;
    throw new UsageError(`${command}: ${option}${missing ? 'is required' : issue.message}`);
  }
  return parsed.data;
}

let chosenUrl: string | undefined;

/** DATABASE_URL, or the embedded server `npm start` runs (said on stderr, password masked). */
export function databaseUrl(): string {
  if (chosenUrl === undefined) {
    const { url, via } = commandDatabase(parseEnv());
    if (via) say(via);
    chosenUrl = url;
  }
  return chosenUrl;
}

export async function withDb<T>(fn: (db: Db) => Promise<T>): Promise<T> {
  const db = createDb(databaseUrl(), { poolSize: 2, applicationName: 'waypost-cli' });
  try {
    return await fn(db);
  } finally {
    await closeDb(db);
  }
}

/** The CLI acts as the operator at the keyboard, not as any person in the database. */
export const CLI_ACTOR: AuditActor = 'system';

export const say = (line: string) => process.stderr.write(`${line}\n`);
