import { createApiKey } from '../server/auth/admin';
import type { Db } from '../server/db';
import { Api } from './api';
import type { Violation } from './checks';
import type { Cluster } from './cluster';
import { probePerKeyLimit, LIMIT_TOLERANCE, type LimitProbe } from './limit-probe';
import { MARKETER_CLIENTS } from './workload';

// `npm run drill -- --topology`: the deployment a paying team runs, in small. Two web
// processes behind a balancer (balancer.ts) that health-checks `/readyz`, three workers,
// every process on PgBouncer in transaction mode in front of PostgreSQL, and a per-key
// limit set low enough to measure across both web processes (limit-probe.ts). The usual
// schedule's web kill takes down one of the two web processes mid-run; the other serves on.

export interface Topology {
  webs: number;
  workers: number;
  /** RATE_LIMIT_PER_KEY for the run: each marketer client has a key of its own, well under it. */
  perKeyLimit: number;
}

export const SINGLE: Topology = { webs: 1, workers: 4, perKeyLimit: 0 };
export const PRODUCTION: Topology = { webs: 2, workers: 3, perKeyLimit: 2_000 };

/** The topology mode's marketer: a key per client, so the workload stays under the per-key limit the probe measures. */
export async function keyPerClient(db: Db, projectId: string, base: () => string): Promise<(client: string) => Api> {
  const apis = new Map<string, Api>();
  for (const client of MARKETER_CLIENTS) {
    const key = await createApiKey(db, { projectId, name: `drill marketer ${client}`, role: 'MARKETER', actor: 'system:drill' });
    apis.set(client, new Api(base, key.secret));
  }
  return (client) => {
    const api = apis.get(client);
    if (!api) throw new Error(`no drill key for client ${client}`);
    return api;
  };
}

/** The per-key limit measured across every web process, before the clients and the faults start. */
export async function measureSharedLimit(db: Db, projectId: string, cluster: Cluster, topology: Topology, log: (line: string) => void): Promise<LimitProbe> {
  const key = await createApiKey(db, { projectId, name: 'drill limit probe', role: 'MARKETER', actor: 'system:drill' });
  const probe = await probePerKeyLimit({ upstreams: cluster.balancer.upstreams, key: key.secret, limit: topology.perKeyLimit });
  log(
    `limit probe: ${probe.allowed} of ${probe.sent} calls allowed across ${probe.byProcess.length} web processes (${probe.byProcess.map((p) => p.allowed).join(' + ')}) in ${probe.seconds} s; ` +
      `RATE_LIMIT_PER_KEY ${probe.configured}, ratio ${probe.ratio}`,
  );
  return probe;
}

/** What the topology's own checks found wrong: a limit multiplied (or not enforced), a process that never served. */
export function topologyViolations(probe: LimitProbe): Violation[] {
  const out: Violation[] = [];
  if (!probe.insideOneWindow) out.push({ check: 'the limit probe did not finish inside one window (its count says nothing)', count: 1, sample: [probe] });
  else if (!probe.withinTolerance) out.push({ check: `per-key limit across web processes not within ${LIMIT_TOLERANCE * 100}% of RATE_LIMIT_PER_KEY`, count: 1, sample: [probe] });
  const idle = probe.byProcess.filter((p) => p.allowed === 0);
  if (idle.length > 0) out.push({ check: 'a web process allowed none of the probe calls (the load was not spread)', count: idle.length, sample: idle });
  return out;
}
