// A page's filters live in its URL (docs/architecture.md, "Conventions"; after Temporal UI's persisted search parameters):
// the server page parses the URL into the router's own input and prefetches exactly that,
// and the browser derives the very same input from the same URL, so a pasted link shows
// the same rows. Lists are repeated keys (?status=WAITING&status=FAILED).

export type SearchRecord = Record<string, string | string[] | undefined>;

export interface SearchSpec {
  /** Keys holding one string. */
  single: readonly string[];
  /** Keys holding a list. */
  multi: readonly string[];
}

function valuesOf(source: SearchRecord | URLSearchParams, key: string): string[] {
  if (source instanceof URLSearchParams) return source.getAll(key);
  const v = source[key];
  return v === undefined ? [] : Array.isArray(v) ? v : [v];
}

/**
 * The raw procedure input a URL describes: strings and lists of strings only, keys in the
 * spec's order, empty values dropped (so the query key is the same on server and client).
 */
export function inputFromSearch(source: SearchRecord | URLSearchParams, spec: SearchSpec): Record<string, string | string[]> {
  const input: Record<string, string | string[]> = {};
  for (const key of spec.single) {
    const [first] = valuesOf(source, key).filter((v) => v.trim() !== '');
    if (first !== undefined) input[key] = first.trim();
  }
  for (const key of spec.multi) {
    const all = [...new Set(valuesOf(source, key).filter((v) => v.trim() !== ''))];
    if (all.length) input[key] = all;
  }
  return input;
}

/** The URL search string of an input (the inverse of inputFromSearch). */
export function searchFromInput(input: Record<string, string | string[] | undefined>): string {
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(input)) {
    if (value === undefined) continue;
    for (const v of Array.isArray(value) ? value : [value]) params.append(key, v);
  }
  const s = params.toString();
  return s ? `?${s}` : '';
}

/** The zod issues of an invalid link, as "field: message" lines. */
export function issuesOf(error: { issues: { path: PropertyKey[]; message: string }[] }): string[] {
  return error.issues.map((i) => `${i.path.map(String).join('.') || 'link'}: ${i.message}`);
}
