import { describe, expect, it } from 'vitest';
import { EnvError, parseEnv } from '../../server/env';

// A malformed secret is named with its problem, never printed. The
// start-up error goes to a terminal and to logs; a password in it is a password leaked.

function message(source: Record<string, string>): string {
  try {
    parseEnv(source);
  } catch (error) {
    expect(error).toBeInstanceOf(EnvError);
    return (error as Error).message;
  }
  throw new Error('expected an EnvError');
}

describe('the configuration check', () => {
  it.each([
    ['AUTH_SECRET', 'hunter2-short-secret'],
    ['DATABASE_URL', 'mysql://admin:S3cr3t-db-pw@db.internal/waypost'],
    ['TEST_DATABASE_URL', 'mysql://admin:S3cr3t-db-pw@db.internal/test'],
    ['DIRECT_DATABASE_URL', 'mysql://admin:S3cr3t-db-pw@db-direct.internal/waypost'],
    ['SMTP_URL', 'http://mailer:S3cr3t-smtp-pw@smtp.internal'],
  ])('names %s and its problem without its value', (name, value) => {
    const text = message({ [name]: value });
    expect(text).toContain(`${name}:`);
    expect(text).toContain('value not shown');
    expect(text).not.toContain(value);
    for (const piece of value.split(/[:@/]+/).filter((p) => p.length >= 6)) expect(text).not.toContain(piece);
  });

  it('still repeats a harmless value, which helps the person fixing it', () => {
    expect(message({ PORT: 'eighty' })).toMatch(/PORT: .*\(got "eighty"\)/);
    expect(message({ LOG_LEVEL: 'loud' })).toContain('got "loud"');
  });
});
