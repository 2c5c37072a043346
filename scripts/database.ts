import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import type { Env } from '../server/env';
import { ensureDatabase, processAlive, startEmbeddedPostgres, type EmbeddedDatabase } from '../server/embedded-postgres';

// Which PostgreSQL the product's scripts use: DATABASE_URL when set, otherwise the
// embedded server under .data/postgres (DESIGN.md section 7), with the product's data in
// its `waypost` database.

export const ROOT = path.resolve(import.meta.dirname, '..');

export interface ProductDatabase {
  url: string;
  /** Set when this process started the embedded server; stop it when done. */
  embedded?: EmbeddedDatabase;
}

export async function openProductDatabase(env: Env, log: (line: string) => void): Promise<ProductDatabase> {
  if (env.DATABASE_URL) return { url: env.DATABASE_URL };
  log(`DATABASE_URL is not set: starting the embedded PostgreSQL (.data/postgres, port ${env.EMBEDDED_PG_PORT})`);
  const embedded = await startEmbeddedPostgres({
    dataDir: path.join(ROOT, '.data', 'postgres'),
    port: env.EMBEDDED_PG_PORT,
    log,
  });
  try {
    return { url: await ensureDatabase(embedded.url, 'waypost'), embedded };
  } catch (error) {
    await embedded.stop();
    throw error;
  }
}

/** A URL fit for a log line: the password, if any, masked. */
export function redactUrl(url: string): string {
  const u = new URL(url);
  if (u.password) u.password = '***';
  return u.toString();
}

function postmasterRunning(dataDir: string): boolean {
  const pidFile = path.join(dataDir, 'postmaster.pid');
  if (!existsSync(pidFile)) return false;
  return processAlive(Number(readFileSync(pidFile, 'utf8').split('\n')[0]));
}

/**
 * Stop an embedded server this process started. Ctrl-C reaches PostgreSQL too (it shares
 * the terminal's process group), so it may be gone already, and then the library's stop()
 * waits forever for an exit event that has passed: the postmaster's own pid file says
 * when it is really down.
 */
export async function stopEmbeddedPostgres(embedded: EmbeddedDatabase): Promise<void> {
  const down = (async () => {
    while (postmasterRunning(embedded.dataDir)) await new Promise((r) => setTimeout(r, 100));
  })();
  await Promise.race([embedded.stop(), down]);
}
