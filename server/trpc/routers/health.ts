import { invariantsFigure } from '../../read/console-figures';
import { router, viewerProcedure } from '../trpc';

export const healthRouter = router({
  /**
   * Each invariant of docs/architecture.md ("Invariants") with its violation count in the caller's project;
   * zero is the only healthy answer. Each carries `asOf`: null when counted for this call,
   * else when the counting began (a large project's counts are served as last computed
   * and refreshed in the background: server/read/figures.ts). The deployment-wide view is
   * the CLI's (`npm run cli -- invariants`), always counted.
   */
  invariants: viewerProcedure.query(async ({ ctx }) => {
    const { value, asOf } = await invariantsFigure(ctx.db, ctx.actor.projectId);
    return value.map((r) => ({ ...r, asOf }));
  }),
});
