import { listAudit } from '../../read/audit';
import { router, viewerProcedure } from '../trpc';
import { listAuditInput } from './audit.schema';

export { listAuditInput } from './audit.schema';

export const auditRouter = router({
  /**
   * The project's audit log, newest first, keyset-paginated on (at, id) both ways; each
   * entry with its actor's label (a person's email, a key's name). Entries about members
   * and API keys are listed to owners only.
   */
  list: viewerProcedure
    .input(listAuditInput)
    .query(({ ctx, input }) => listAudit(ctx.db, { ...input, projectId: ctx.actor.projectId, owner: ctx.actor.role === 'OWNER' })),
});
