import type { inferRouterInputs, inferRouterOutputs } from '@trpc/server';
import type { AppRouter } from '@/server/trpc/root';
import type { SearchSpec } from '../_components/search-params';

export type RouterInputs = inferRouterInputs<AppRouter>;
export type RouterOutputs = inferRouterOutputs<AppRouter>;

/** The executions list's URL keys: executions.list's own input fields. */
export const EXECUTION_SEARCH: SearchSpec = {
  single: ['workflowId', 'stepId', 'contact', 'since', 'until', 'cursor', 'before'],
  multi: ['status', 'stuck'],
};

/** A URL's raw input as the procedure takes it (strings, as a JSON client would send them). */
export type ListExecutionsInput = RouterInputs['executions']['list'];
