import { transaction, type Db } from '../db';
import { log } from '../log';
import { writeAudit, type Acting } from './audit';
import { createEngineContext, DEFAULT_ENGINE_CONFIG } from './context';
import { dispatchEvent, storeEvent, type TrackEventInput } from './events';
import { notifyWorkers } from './wakeup';

// events.trackMany (POST /api/v1/events/batch): many events in one call, each answered on
// its own. Stored EVENT_CHUNK per transaction, each event with its audit entry as
// events.track writes it (accepted means durable: a chunk commits or not as a whole, and
// a chunk that committed stays when a later one fails); then dispatched as events.track
// dispatches, after the commit, a few at a time. A dispatch that fails is the outbox
// sweeper's to retry, as for one event.

/** Events per transaction (docs/api.md, "Batches"). */
export const EVENT_CHUNK = 250;
/** Events of a batch dispatched at once after their chunk committed. */
const DISPATCH_CONCURRENCY = 4;

export type BatchEventResult = { eventId: string; duplicate: boolean } | { error: { reason: 'CONTACT_NOT_FOUND'; message: string } };

export async function trackEventsAudited(db: Db, by: Acting, inputs: Omit<TrackEventInput, 'projectId'>[]): Promise<BatchEventResult[]> {
  const results: BatchEventResult[] = [];
  for (let start = 0; start < inputs.length; start += EVENT_CHUNK) {
    const chunk = inputs.slice(start, start + EVENT_CHUNK);
    const stored = await transaction(db, 'ENGINE', async (tx) => {
      const out: BatchEventResult[] = [];
      for (const input of chunk) {
        const r = await storeEvent(tx, { ...input, projectId: by.projectId }, DEFAULT_ENGINE_CONFIG.inlineDispatchSeconds);
        await writeAudit(tx, {
          ...by,
          action: 'events.track',
          targetType: 'event',
          targetId: r.ok ? r.eventId : (input.contactId ?? input.name),
          outcome: r.ok ? 'APPLIED' : 'REJECTED',
          after: r.ok ? { name: input.name, duplicate: r.duplicate, idempotencyKey: input.idempotencyKey ?? null, batch: true } : r,
        });
        out.push(r.ok ? { eventId: r.eventId, duplicate: r.duplicate } : { error: { reason: r.reason, message: 'No such contact in this project.' } });
      }
      return out;
    });
    results.push(...stored);
    await dispatchAll(db, stored);
  }
  return results;
}

async function dispatchAll(db: Db, stored: BatchEventResult[]): Promise<void> {
  const fresh = stored.flatMap((r) => ('eventId' in r && !r.duplicate ? [r.eventId] : []));
  const engine = createEngineContext(db, { owner: `api:${process.pid}` });
  let resumed = false;
  let next = 0;
  const worker = async () => {
    while (next < fresh.length) {
      const eventId = fresh[next++]!;
      const summary = await dispatchEvent(engine, eventId).catch((error: unknown) => {
        log.warn(`events.trackMany: inline dispatch of ${eventId} failed; the sweeper will retry:`, { err: error });
        return null;
      });
      if (summary?.resumed.some((r) => r.result.resumed)) resumed = true;
    }
  };
  await Promise.all(Array.from({ length: Math.min(DISPATCH_CONCURRENCY, fresh.length) }, worker));
  if (resumed) await notifyWorkers(db).catch(() => {});
}
