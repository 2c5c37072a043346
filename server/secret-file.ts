import { chmodSync, existsSync, linkSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import path from 'node:path';

// A secret generated once and kept in a file only this user can read: the session
// secret (.data/auth-secret) and the embedded PostgreSQL's password (.data/postgres.password).

/** 32 random bytes, URL-safe (no escaping inside a connection URL). */
export function randomSecret(): string {
  return randomBytes(32).toString('base64url');
}

/** The secret stored in the file, or undefined when there is none yet. Tightens its mode to 0600. */
export function readSecretFile(file: string, minLength = 32): string | undefined {
  if (!existsSync(file)) return undefined;
  const stored = readFileSync(file, 'utf8').trim();
  if (stored.length < minLength) {
    throw new Error(`${file} holds fewer than ${minLength} characters; delete it to have a new one generated`);
  }
  chmodSync(file, 0o600);
  return stored;
}

/**
 * The secret in `file`, generated (and written with mode 0600) when the file does not
 * exist. `created` says whether this call wrote it.
 */
export function readOrCreateSecretFile(file: string, minLength = 32): { secret: string; created: boolean } {
  const stored = readSecretFile(file, minLength);
  if (stored !== undefined) return { secret: stored, created: false };
  const secret = randomSecret();
  mkdirSync(path.dirname(file), { recursive: true });
  // Written aside, then linked into place: two starts racing on a fresh checkout must
  // neither each keep a different secret nor read a file the other has half written.
  const pending = `${file}.${process.pid}.${randomBytes(4).toString('hex')}`;
  writeFileSync(pending, `${secret}\n`, { mode: 0o600 });
  try {
    linkSync(pending, file);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    return { secret: readSecretFile(file, minLength)!, created: false };
  } finally {
    rmSync(pending, { force: true });
  }
  return { secret, created: true };
}
