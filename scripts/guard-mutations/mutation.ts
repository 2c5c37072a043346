// One guard mutation (scripts/guard-mutations.ts): the guard in words, the edits that
// remove it from the code, and the scenario of the suite that must then fail.

/** A guard removed: `find` must occur in `file` (else the mutation is out of date). */
export interface Mutation {
  guard: string;
  edits: { file: string; find: string; replace: string }[];
  test: string;
  scenario: string;
  rounds?: number;
}
