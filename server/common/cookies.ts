// The names of the cookies sign-in depends on, in a module with no imports so that the
// request proxy (proxy.ts) can check for a session without loading better-auth.

/** better-auth's cookie prefix: cookies are waypost.session_token and the like. */
export const AUTH_COOKIE_PREFIX = 'waypost';

/** The prefix of the cookies better-auth sets over https (server/auth/auth.ts says why). */
export const HOST_COOKIE_PREFIX = '__Host-';

/** The session cookie, plain on http://localhost and __Host- prefixed over https. */
export const SESSION_COOKIE_NAMES = [`${AUTH_COOKIE_PREFIX}.session_token`, `${HOST_COOKIE_PREFIX}${AUTH_COOKIE_PREFIX}.session_token`];

/** The console's project switcher: the id of the project a person works in. */
export const PROJECT_COOKIE = 'waypost_project';
/** Or, for scripts and tests, the same as a request header. */
export const PROJECT_HEADER = 'x-waypost-project';

/** The path (and query) of the page being rendered, passed by proxy.ts to the layout. */
export const REQUEST_PATH_HEADER = 'x-waypost-path';
