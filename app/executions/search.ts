import type { RouterInputs } from '@/app/_trpc/types';
import type { SearchSpec } from '../_components/search-params';


/** The executions list's URL keys: executions.list's own input fields. */
export const EXECUTION_SEARCH: SearchSpec = {
  single: ['workflowId', 'stepId', 'contact', 'since', 'until', 'cursor', 'before'],
  multi: ['status', 'stuck'],
};

/** A URL's raw input as the procedure takes it (strings, as a JSON client would send them). */
export type ListExecutionsInput = RouterInputs['executions']['list'];

/**
 * `?repair=MIGRATE` beside the filters: open "Repair matching…" on them with MIGRATE chosen
 * (the publish dialog's link to the executions left at a removed step). Not a list filter:
 * read once by the view, then dropped from the address.
 */
export const REPAIR_PARAM = 'repair';

/** The step filter's older versions: those with executions still on them (the page prefetches them too). */
export function olderVersionsWithActive(versions: { latestVersion: number; items: { number: number; active: number }[] } | undefined): number[] {
  return versions?.items.filter((v) => v.number < versions.latestVersion && v.active > 0).map((v) => v.number) ?? [];
}
