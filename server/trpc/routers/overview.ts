import { recentFailures, throughput } from '../../read/overview';
import { router, viewerProcedure } from '../trpc';
import { recentFailuresInput, throughputInput } from './overview.schema';

// The overview page's own reads; the SQL is in server/read/overview.ts.

export type { FailureItem, FailureKind, Throughput, ThroughputBucket } from '../../read/overview';

export const overviewRouter = router({
  /**
   * Per minute over the last `minutes` (60 by default), the current minute last and every
   * minute present (zero when nothing happened): executions started, step executions
   * finished, events tracked; with the window's totals.
   */
  throughput: viewerProcedure
    .input(throughputInput)
    .query(({ ctx, input }) => throughput(ctx.db, { projectId: ctx.actor.projectId, minutes: input.minutes })),

  /**
   * The latest failures, latest first, at most `limit` (10 by default): FAILED executions,
   * dead-lettered events and failed emails, each with what an operator needs to find it.
   */
  recentFailures: viewerProcedure
    .input(recentFailuresInput)
    .query(({ ctx, input }) => recentFailures(ctx.db, ctx.actor.projectId, input.limit)),
});
