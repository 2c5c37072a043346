import { checkInvariants } from '../../engine/invariants';
import { router, viewerProcedure } from '../trpc';

export const healthRouter = router({
  /** Each invariant of DESIGN.md section 3 with its violation count; zero is the only healthy answer. */
  invariants: viewerProcedure.query(({ ctx }) => checkInvariants(ctx.db)),
});
