import { createCallerFactory, router } from './trpc';
import { apiKeysRouter } from './routers/apiKeys';
import { auditRouter } from './routers/audit';
import { contactsRouter } from './routers/contacts';
import { enrollmentsRouter } from './routers/enrollments';
import { eventsRouter } from './routers/events';
import { executionsRouter } from './routers/executions';
import { healthRouter } from './routers/health';
import { invitationsRouter } from './routers/invitations';
import { membersRouter } from './routers/members';
import { overviewRouter } from './routers/overview';
import { repairRouter } from './routers/repair';
import { retentionRouter } from './routers/retention';
import { templatesRouter } from './routers/templates';
import { waitsRouter } from './routers/waits';
import { webhooksRouter } from './routers/webhooks';
import { workflowsRouter } from './routers/workflows';

export const appRouter = router({
  health: healthRouter,
  contacts: contactsRouter,
  workflows: workflowsRouter,
  templates: templatesRouter,
  enrollments: enrollmentsRouter,
  events: eventsRouter,
  waits: waitsRouter,
  executions: executionsRouter,
  overview: overviewRouter,
  repair: repairRouter,
  audit: auditRouter,
  apiKeys: apiKeysRouter,
  members: membersRouter,
  invitations: invitationsRouter,
  webhooks: webhooksRouter,
  retention: retentionRouter,
});

export type AppRouter = typeof appRouter;

/** Calls procedures in-process (React Server Components, scripts, tests): `createCaller(ctx).health.invariants()`. */
export const createCaller = createCallerFactory(appRouter);
