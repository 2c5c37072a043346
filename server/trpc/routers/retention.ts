import { env } from '../../env';
import { retentionStatus } from '../../retention/status';
import { router, viewerProcedure } from '../trpc';

export const retentionRouter = router({
  /**
   * The retention policy (RETENTION_DAYS, AUDIT_RETENTION_DAYS as this process reads them;
   * null days: off), the deployment's last sweep of each kind (or the one running), what it
   * removed in the caller's project, and what is never removed (docs/deploy.md,
   * "Retention"). Read-only: the policy is set by the environment. Any member may read it:
   * it says how long the history they read is kept.
   */
  status: viewerProcedure.query(({ ctx }) =>
    retentionStatus(ctx.db, ctx.actor.projectId, { historyDays: env().RETENTION_DAYS, auditDays: env().AUDIT_RETENTION_DAYS }),
  ),
});
