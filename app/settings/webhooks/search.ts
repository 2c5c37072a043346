import type { SearchSpec } from '../../_components/search-params';
import type { RouterInputs } from '@/app/_trpc/types';

export type DeliveriesInput = RouterInputs['webhooks']['deliveries'];

/**
 * An endpoint's page's URL keys: webhooks.deliveries' own filter (`status`), its page
 * (`cursor`), and the delivery opened beside the log (`delivery`).
 */
export const DELIVERY_LOG_SEARCH: SearchSpec = { single: ['status', 'cursor', 'delivery'], multi: [] };

/** webhooks.deliveries' input for an endpoint and its page's URL input (without the opened delivery). */
export function deliveriesInputOf(endpointId: string, input: Record<string, string | string[]>): DeliveriesInput {
  const { delivery: _opened, ...filter } = input;
  // Checked by the router's own schema (the page parses it first; the API refuses it too).
  return { endpointId, ...filter } as DeliveriesInput;
}
