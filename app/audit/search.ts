import type { SearchSpec } from '../_components/search-params';
import type { RouterInputs } from '@/app/_trpc/types';

/** The audit page's URL keys: audit.list's own input fields. */
export const AUDIT_SEARCH: SearchSpec = { single: ['actor', 'action', 'targetId', 'since', 'until', 'cursor', 'before'], multi: ['outcome'] };
export type ListAuditInput = RouterInputs['audit']['list'];
