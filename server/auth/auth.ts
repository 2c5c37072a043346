import { betterAuth } from 'better-auth';
import { prismaAdapter } from 'better-auth/adapters/prisma';
import { poolOf, type Db } from '../db';
import { rateCounterFor } from '../db/rate-counter';
import { env, EnvError, type Env } from '../env';
import { AUTH_COOKIE_PREFIX, HOST_COOKIE_PREFIX } from '../common/cookies';

// People sign in with better-auth: email + password (its default scrypt hash), a session
// row in PostgreSQL and an httpOnly SameSite=Lax cookie holding only the session token.
// Accounts are made by the CLI or by an owner (members.add), never by a visitor: sign-up
// is off. Sign-in is rate limited per client IP, because a password is the only thing
// standing between the internet and a project's contacts: counted in PostgreSQL
// (server/db/rate-counter.ts), so several web processes enforce one limit.


/** Wrong passwords a client IP may try in SIGN_IN_WINDOW_SECONDS before getting 429. */
export const SIGN_IN_MAX_ATTEMPTS = 5;
export const SIGN_IN_WINDOW_SECONDS = 60;

/** A person signs in again after a week; see `disableSessionRefresh` below for why not sliding. */
const SESSION_SECONDS = 7 * 24 * 3600;

export interface AuthSettings {
  secret: string;
  /** Where the console is served: its origin is the one sign-in accepts requests from. */
  baseURL: string;
  trustedOrigins: string[];
}

/**
 * From the environment: PUBLIC_URL when the console has a public address; otherwise it is
 * served on this machine, reachable as localhost or 127.0.0.1 on PORT.
 */
export function authSettings(config: Env = env()): AuthSettings {
  if (!config.AUTH_SECRET) {
    throw new EnvError(
      'AUTH_SECRET is not set. Start the product with `npm start` (which generates one in .data/auth-secret), or set AUTH_SECRET to at least 32 random characters (e.g. `openssl rand -base64 32`).',
    );
  }
  const trustedOrigins = consoleOrigins(config);
  return { secret: config.AUTH_SECRET, baseURL: trustedOrigins[0]!, trustedOrigins };
}

/**
 * The origins the console is served from: PUBLIC_URL's, or localhost and 127.0.0.1 on PORT.
 * Sign-in accepts requests from these only, and so do signed-in tRPC mutations
 * (server/http/api-request.ts crossSiteRefusal).
 */
export function consoleOrigins(config: Env = env()): string[] {
  return config.PUBLIC_URL ? [config.PUBLIC_URL] : [`http://localhost:${config.PORT}`, `http://127.0.0.1:${config.PORT}`];
}

export function createAuth(db: Db, settings: AuthSettings) {
  const https = settings.baseURL.startsWith('https://');
  return betterAuth({
    appName: 'Waypost',
    secret: settings.secret,
    baseURL: settings.baseURL,
    basePath: '/api/auth',
    trustedOrigins: settings.trustedOrigins,
    database: prismaAdapter(db, { provider: 'postgresql', transaction: true }),
    emailAndPassword: {
      enabled: true,
      disableSignUp: true,
      // Same bounds as members.add and the CLI, so every password that can be set can sign in.
      minPasswordLength: 8,
      maxPasswordLength: 128,
    },
    session: {
      expiresIn: SESSION_SECONDS,
      // The console reads sessions in server renders and tRPC calls, where no cookie can be
      // written back; a refresh would extend the row but not the cookie. Keeping both fixed
      // means the database and the browser always agree on when a session ends.
      disableSessionRefresh: true,
    },
    rateLimit: {
      // On in every environment (better-auth's default is production only), so tests prove it.
      enabled: true,
      window: 10,
      max: 100,
      customRules: {
        '/sign-in/email': { window: SIGN_IN_WINDOW_SECONDS, max: SIGN_IN_MAX_ATTEMPTS },
      },
      // Counted in PostgreSQL with the API's limits (server/db/rate-counter.ts: one upsert,
      // fixed windows on the database's clock, an in-memory insurance while PostgreSQL does
      // not answer), so every web process enforces the one limit. Not better-auth's own
      // 'database' storage: it reads, then updates with conditions, then reads again (up to
      // four statements through the Prisma adapter per request), on each process's clock.
      customStorage: {
        async consume(key, rule) {
          const pool = poolOf(db);
          if (!pool) throw new Error('sign-in limits need a database client made by createDb');
          const refusal = await rateCounterFor(pool).take([{ key: `auth:${key}`, limit: rule.max, windowSeconds: rule.window }], 1);
          return refusal ? { allowed: false, retryAfter: Math.max(1, Math.ceil(refusal.retryAfterMs / 1000)) } : { allowed: true, retryAfter: null };
        },
      },
    },
    advanced: {
      // Over https (PUBLIC_URL), __Host-waypost.session_token: the browser then only accepts
      // it Secure, for Path=/ and without a Domain, so a sibling subdomain (or a plain-http
      // page on the same host) cannot plant or overwrite a session cookie for the console.
      // better-auth's own useSecureCookies would give the weaker __Secure- prefix, so it is
      // off and Secure is set here. On http://localhost a Secure cookie would never be sent
      // back: plain waypost.session_token there.
      ...(https
        ? { cookiePrefix: `${HOST_COOKIE_PREFIX}${AUTH_COOKIE_PREFIX}`, useSecureCookies: false, defaultCookieAttributes: { secure: true, path: '/' } }
        : { cookiePrefix: AUTH_COOKIE_PREFIX, useSecureCookies: false }),
      // better-auth skips its Origin check under NODE_ENV=test; tests must see what
      // production does, so it is on everywhere.
      disableOriginCheck: false,
      // Next.js's server puts the peer address in x-forwarded-for when a request arrives
      // without one; behind a reverse proxy, the proxy must set it (and drop the client's).
      ipAddress: { ipAddressHeaders: ['x-forwarded-for'] },
    },
    telemetry: { enabled: false },
  });
}

export type Auth = ReturnType<typeof createAuth>;

const instances = new WeakMap<Db, Auth>();

/** The better-auth instance over a database client (one per client: tests use many). */
export function authFor(db: Db): Auth {
  let auth = instances.get(db);
  if (!auth) {
    auth = createAuth(db, authSettings());
    instances.set(db, auth);
  }
  return auth;
}
