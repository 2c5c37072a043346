// The console's read model of executions (docs/architecture.md, "Layers"): the list, one execution's
// story, the counts. Routers validate, authorize and call these; every statement starts
// from an index range (test/api/executions-explain.test.ts, test/api/read-explain.test.ts).
// list.ts: the list; detail.ts: one execution's story; stats.ts: the counts.

export * from './list';
export * from './detail';
export * from './stats';
