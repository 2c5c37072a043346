import { z } from 'zod';

export const throughputInput = z
  .object({
    /** One-minute buckets ending with the current minute: the last hour unless told. */
    minutes: z.number().int().min(1).max(180).default(60),
  })
  .prefault({});

export const recentFailuresInput = z
  .object({
    /** How many, across every kind. */
    limit: z.number().int().min(1).max(50).default(10),
  })
  .prefault({});
