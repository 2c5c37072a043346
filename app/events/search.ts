import type { SearchSpec } from '../_components/search-params';
import type { RouterInputs } from '@/app/_trpc/types';

/** The events page's URL keys: events.list's own input fields. */
export const EVENT_SEARCH: SearchSpec = { single: ['name', 'contact', 'cursor', 'before'], multi: ['state'] };
export type ListEventsInput = RouterInputs['events']['list'];
