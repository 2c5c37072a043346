// The path of the metrics answer (metrics.ts), alone in a module that imports nothing, as
// health-paths.ts is for the health answers.

export const METRICS_PATH = '/metrics';
