import type { SearchSpec } from '../_components/search-params';
import type { RouterInputs } from '@/app/_trpc/types';

/** The stuck page's URL keys: repair.stuckGroups' own input fields. */
export const STUCK_SEARCH: SearchSpec = { single: ['workflowId', 'reason'], multi: [] };
export type StuckGroupsInput = RouterInputs['repair']['stuckGroups'];
