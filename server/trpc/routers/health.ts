import { checkInvariants } from '../../engine/invariants';
import { router, viewerProcedure } from '../trpc';

export const healthRouter = router({
  /**
   * Each invariant of DESIGN.md section 3 with its violation count in the caller's project;
   * zero is the only healthy answer. The deployment-wide view is the CLI's (`npm run cli -- invariants`).
   */
  invariants: viewerProcedure.query(({ ctx }) => checkInvariants(ctx.db, { projectId: ctx.actor.projectId })),
});
