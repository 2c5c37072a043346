// The paths of the health answers (health.ts), alone in a module that imports nothing, so
// proxy.ts can let them through without a session and without loading the database client.

export const HEALTH_PATHS = ['/healthz', '/readyz'] as const;
export type HealthPath = (typeof HEALTH_PATHS)[number];

export function isHealthPath(pathname: string): pathname is HealthPath {
  return (HEALTH_PATHS as readonly string[]).includes(pathname);
}
