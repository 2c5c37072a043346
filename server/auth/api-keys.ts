import { createHash, randomBytes } from 'node:crypto';

// API keys for programs: `wp_` + 40 random base62 characters (~238 bits). Only a SHA-256
// hash is stored: a key is high-entropy, so a fast hash is enough to make a stolen table
// useless, and it lets a request's key be found by an indexed equality lookup. The
// secret is shown once, when created, and never again (not in logs, audit or responses).

const ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
export const API_KEY_PATTERN = /^wp_[0-9A-Za-z]{40}$/;

export function hashApiKey(secret: string): string {
  return createHash('sha256').update(secret, 'utf8').digest('hex');
}

export function generateApiKey(): { secret: string; prefix: string; hashedSecret: string } {
  const bytes = randomBytes(40);
  let body = '';
  for (const byte of bytes) body += ALPHABET[byte % 62];
  const secret = `wp_${body}`;
  return { secret, prefix: secret.slice(0, 10), hashedSecret: hashApiKey(secret) };
}
