import { z } from 'zod';
import type { Db } from '../../server/db';
import { createEngineContext } from '../../server/engine/context';
import { enroll } from '../../server/engine/enrollment';
import { trackEvent } from '../../server/engine/events';
import { runWorkerOnce } from '../../server/engine/worker';
import { appRouter } from '../../server/trpc/root';
import { inviteMember } from '../../server/auth/invitations';
import { createPerson, newApiKey } from './auth';
import { createContact, createProject, waitWorkflow, workflowFrom } from './fixtures';
import { type MatrixRow, type ProjectRows } from './authorization-cells';
import { ADMIN_ROWS } from './authorization-rows-admin';
import { DATA_ROWS } from './authorization-rows-data';
import { WEBHOOK_ROWS } from './authorization-rows-webhooks';
import { createEndpoint, sendTestEvent } from '../../server/webhooks/endpoints';

export * from './authorization-cells';

// The authorization matrix of docs/api.md, "Authentication and roles", one table for the
// in-process walk (test/api/authorization-matrix.test.ts) and the walk over HTTP
// (test/security/authorization-http.test.ts): per procedure of the real router, its
// minimum role, a well-formed input on the caller's own project, the same call naming
// another project's rows, and the procedure's real answer to that input on the fixture
// projectWithRows makes. Two procedures are not a project's: a person's own invitations
// (PERSON: any signed-in person, whatever their role or projects; API keys UNAUTHORIZED)
// and making an account from an invitation link (ANYONE: the link is the credential).
//
// The rows are in authorization-rows-data.ts and authorization-rows-admin.ts, written
// with the checks of authorization-cells.ts.

export const MATRIX: Record<string, MatrixRow> = { ...DATA_ROWS, ...ADMIN_ROWS, ...WEBHOOK_ROWS };

export type Procedure = { _def: { type: 'query' | 'mutation' | 'subscription'; inputs: z.ZodType[] } };
export const PROCEDURES = appRouter._def.procedures as unknown as Record<string, Procedure>;

/** Every property name anywhere in a procedure's input, read from its zod schemas. */
export function inputKeys(procedure: Procedure): Set<string> {
  const keys = new Set<string>();
  const walk = (node: unknown) => {
    if (Array.isArray(node)) return node.forEach(walk);
    if (!node || typeof node !== 'object') return;
    for (const [key, value] of Object.entries(node)) {
      if (key === 'properties' && value && typeof value === 'object') for (const name of Object.keys(value)) keys.add(name);
      walk(value);
    }
  };
  for (const schema of procedure._def.inputs) walk(z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' }));
  return keys;
}

export async function projectWithRows(db: Db, name: string): Promise<ProjectRows> {
  const project = await createProject(db, name);
  const contactEmail = `${name}-contact@example.com`;
  const contact = await createContact(db, project.id, contactEmail);
  const erasable = await createContact(db, project.id, `${name}-erasable@example.com`);
  const workflow = await workflowFrom(db, project.id, waitWorkflow({ name: `${name} waits` }));
  const enrolled = await enroll(db, { projectId: project.id, workflowId: workflow.id, contactId: contact.id });
  if (!enrolled.ok) throw new Error(`fixture enrollment failed: ${JSON.stringify(enrolled)}`);
  const engine = createEngineContext(db);
  await runWorkerOnce(engine);
  const wait = await db.stepExecution.findFirstOrThrow({ where: { executionId: enrolled.executionId, status: 'WAITING' } });
  const event = await trackEvent(engine, { projectId: project.id, name: 'page_view', contactId: contact.id, data: {} });
  const member = await createPerson(db, { projectId: project.id, email: `${name}-member@example.com`, password: 'member password', role: 'MARKETER' });
  // The member the matrix may demote must not be the project's last OWNER, or setRole's
  // answer would be about that rule instead of about authorization.
  await createPerson(db, { projectId: project.id, email: `${name}-owner@example.com`, password: 'owner password', role: 'OWNER' });
  const apiKey = await newApiKey(db, project.id, 'VIEWER', `${name} integration`);
  const invited = await inviteMember(db, { projectId: project.id, email: `${name}-invitee@example.com`, role: 'OWNER', actor: 'system' });
  if (invited.outcome !== 'INVITED') throw new Error('fixture invitation not made');
  const by = { projectId: project.id, actor: 'system' };
  const hook = await createEndpoint(db, by, { url: `https://${name}.hooks.example.com/waypost`, eventTypes: ['event.dead'] });
  const spare = await createEndpoint(db, by, { url: `https://${name}.hooks.example.com/spare`, eventTypes: ['event.dead'] });
  if (!hook.ok || !spare.ok) throw new Error('fixture webhook endpoints not made');
  const test = await sendTestEvent(db, by, hook.endpoint.id);
  if (!test.ok) throw new Error('fixture webhook message not made');
  return {
    projectId: project.id,
    contactId: contact.id,
    contactEmail,
    erasableContactId: erasable.id,
    workflowId: workflow.id,
    executionId: enrolled.executionId,
    stepExecutionId: wait.id,
    eventId: event.ok ? event.eventId : (() => { throw new Error('fixture event not stored'); })(),
    memberUserId: member.userId,
    apiKeyId: apiKey.id,
    invitationId: invited.invitation.id,
    invitationToken: invited.token,
    webhookEndpointId: hook.endpoint.id,
    webhookMessageId: test.delivery.id,
    spareWebhookEndpointId: spare.endpoint.id,
  };
}
