import type { DbTx } from '../db';

// The audit log names actors by id ("user:<id>", "apikey:<id>", "worker:<id>", "system");
// the console shows people by email and keys by name. One lookup per page, by primary key.

const GUID = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;

/** A readable label per actor id that has one (people: email; API keys: "key <name>"). */
export async function actorLabels(db: DbTx, projectId: string, actors: string[]): Promise<Map<string, string>> {
  const unique = [...new Set(actors)];
  const userIds = unique.filter((a) => a.startsWith('user:')).map((a) => a.slice('user:'.length));
  const keyIds = unique
    .filter((a) => a.startsWith('apikey:'))
    .map((a) => a.slice('apikey:'.length))
    .filter((k) => GUID.test(k));
  const [users, keys] = await Promise.all([
    userIds.length ? db.user.findMany({ where: { id: { in: userIds } }, select: { id: true, email: true } }) : Promise.resolve([]),
    keyIds.length
      ? db.apiKey.findMany({ where: { id: { in: keyIds }, projectId }, select: { id: true, name: true } })
      : Promise.resolve([]),
  ]);
  const labels = new Map<string, string>();
  for (const u of users) labels.set(`user:${u.id}`, u.email);
  for (const k of keys) labels.set(`apikey:${k.id}`, `key “${k.name}”`);
  return labels;
}

/** An actor as the console names it: its label when it has one, else its id ("system", "worker:<id>"). */
export function actorLabel(labels: Map<string, string>, actor: string): string {
  return labels.get(actor) ?? actor;
}
