import type { SearchSpec } from '../_components/search-params';
import type { RouterInputs } from '../executions/search';

/** The events page's URL keys: events.list's own input fields. */
export const EVENT_SEARCH: SearchSpec = { single: ['name', 'contact', 'cursor', 'before'], multi: ['state'] };
export type ListEventsInput = RouterInputs['events']['list'];
