/** The `?version=N` of a workflow's page: a whole number from 1, or absent (the latest). Shared by the page and its client view, so both ask for the same query. */
export function versionOfSearch(search: URLSearchParams): { value: number | undefined; error: string | null } {
  const raw = search.get('version');
  if (raw === null || raw.trim() === '') return { value: undefined, error: null };
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1 || n > 1_000_000) return { value: undefined, error: `version: "${raw}" is not a version number (1, 2, …)` };
  return { value: n, error: null };
}
