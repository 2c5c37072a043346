// The overview's inputs, shared by the page's server prefetch and its client panels so
// both read the same query key. (A 'use client' module's exports are client references
// on the server, not values: constants the server needs live here.)

/** The throughput window: the last hour, one bucket a minute. */
export const THROUGHPUT_INPUT = { minutes: 60 } as const;

/** The latest failures, not a log (the Stuck page has them all). */
export const RECENT_FAILURES_INPUT = { limit: 10 } as const;
