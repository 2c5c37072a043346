import { createCallerFactory, router } from './trpc';
import { healthRouter } from './routers/health';
import { workflowsRouter } from './routers/workflows';

export const appRouter = router({
  health: healthRouter,
  workflows: workflowsRouter,
});

export type AppRouter = typeof appRouter;

/** Calls procedures in-process (React Server Components, scripts, tests): `createCaller(ctx).health.invariants()`. */
export const createCaller = createCallerFactory(appRouter);
