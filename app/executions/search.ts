import type { RouterInputs } from '@/app/_trpc/types';
import type { SearchSpec } from '../_components/search-params';


/** The executions list's URL keys: executions.list's own input fields. */
export const EXECUTION_SEARCH: SearchSpec = {
  single: ['workflowId', 'stepId', 'contact', 'since', 'until', 'cursor', 'before'],
  multi: ['status', 'stuck'],
};

/** A URL's raw input as the procedure takes it (strings, as a JSON client would send them). */
export type ListExecutionsInput = RouterInputs['executions']['list'];
