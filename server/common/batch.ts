/**
 * The most calls one /api/trpc request may batch: the server answers 400 beyond it, and the
 * console's client splits its batches at it. Its own module, with no imports, so the
 * browser bundle can read it.
 */
export const MAX_BATCH_SIZE = 20;
