import { spawn } from 'node:child_process';
import path from 'node:path';
import { expect, test } from '@playwright/test';
import { startWebServer, type WebServer } from '../test/support/web-server';
import { asDistinctClient, DEMO, signIn } from './sign-in';
import { e2eDatabaseUrl, sql } from './staging';

// Settings → Retention (docs/deploy.md, "Retention"). The shared e2e server runs with
// retention off, as the demo does: its panel says so. Then the real thing: 25 finished
// executions of the demo project (with their step rows, emails and events) staged 40
// days old, a worker process of this spec's own with RETENTION_DAYS=30 sweeps them (the
// shared workers keep retention off), and a web server of this spec's own with the same
// settings shows the policy, the last sweep and what it removed, and what is never removed.

const ROOT = path.resolve(import.meta.dirname, '..');
const shot = (name: string) => path.join(import.meta.dirname, 'screenshots', `${name}.png`);
const RETENTION = { RETENTION_DAYS: '30', AUDIT_RETENTION_DAYS: '365' };

/** 25 COMPLETED executions of the demo's first workflow, finished 40 days ago, each with a SENT email and a processed event. */
async function stageOldHistory(): Promise<string[]> {
  const rows = await sql<{ id: string }>(
    `WITH p AS (SELECT id FROM "Project" WHERE name = 'demo'),
          w AS (SELECT w.id, v.id AS version,
                       (SELECT id FROM "WorkflowStep" s WHERE s."versionId" = v.id AND s.type = 'TRIGGER' LIMIT 1) AS start,
                       (SELECT id FROM "WorkflowStep" s WHERE s."versionId" = v.id AND s.type = 'SEND_EMAIL' LIMIT 1) AS mail
                  FROM "Workflow" w JOIN "WorkflowVersion" v ON v."workflowId" = w.id AND v.number = w."latestVersion"
                 WHERE w."projectId" = (SELECT id FROM p) ORDER BY w.name LIMIT 1),
          g AS (SELECT n, gen_random_uuid() AS contact, gen_random_uuid() AS execution, gen_random_uuid() AS s1, gen_random_uuid() AS s2,
                       now() - interval '40 days' - n * interval '1 minute' AS at FROM generate_series(1, 25) n),
          c AS (INSERT INTO "Contact" (id, "projectId", email) SELECT contact, (SELECT id FROM p), 'retention-' || n || '@example.com' FROM g),
          x AS (INSERT INTO "WorkflowExecution" (id, "projectId", "workflowId", "workflowVersionId", "contactId", status, "currentStepId",
                                                 version, "startedAt", "updatedAt", "finishedAt")
                SELECT execution, (SELECT id FROM p), w.id, w.version, contact, 'COMPLETED', w.mail, 3, at, at, at FROM g, w RETURNING id),
          s AS (INSERT INTO "StepExecution" (id, "executionId", "stepId", status, output, "startedAt", "finishedAt")
                SELECT s1, execution, w.start, 'COMPLETED'::"StepStatus", '{}'::jsonb, at, at FROM g, w
                UNION ALL SELECT s2, execution, w.mail, 'COMPLETED'::"StepStatus", '{"queued": true}'::jsonb, at, at FROM g, w),
          m AS (INSERT INTO "Message" ("projectId", "executionId", "stepExecutionId", "to", subject, body, status, "sentAt", "createdAt")
                SELECT (SELECT id FROM p), execution, s2, 'retention-' || n || '@example.com', 'Hello', 'Hi', 'SENT', at, at FROM g),
          e AS (INSERT INTO "Event" ("projectId", "contactId", name, "createdAt", "processedAt", "nextDispatchAt", "dispatchAttempts")
                SELECT (SELECT id FROM p), contact, 'page_view', at, at, at, 1 FROM g)
     SELECT id FROM x`,
  );
  // A sweep is due: none has run on this database yet, or (a retried run) pretend so.
  await sql(`UPDATE "RetentionSweep" SET "lastFinishedAt" = NULL, owner = NULL, "runningSince" = NULL`);
  return rows.map((r) => r.id);
}

/** A worker process (`npm run worker`) on the e2e database with retention on, until both its sweeps have run: their log lines. */
async function sweepWithAWorker(databaseUrl: string): Promise<string[]> {
  const child = spawn(process.execPath, ['--import', 'tsx', path.join(ROOT, 'scripts', 'worker.ts'), '--concurrency', '2'], {
    cwd: ROOT,
    env: { ...process.env, DATABASE_URL: databaseUrl, NODE_ENV: 'production', ...RETENTION },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const swept = new Promise<string[]>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no sweeps within 60 s:\n${output}`)), 60_000);
    const take = (chunk: Buffer) => {
      output += chunk.toString();
      const lines = ['history', 'audit'].map((kind) => output.split('\n').find((l) => l.includes(`retention sweep (${kind})`)));
      if (lines.every(Boolean)) {
        clearTimeout(timer);
        resolve(lines as string[]);
      }
    };
    child.stdout!.on('data', take);
    child.stderr!.on('data', take);
    child.once('exit', (code) => reject(new Error(`the worker exited (${code}):\n${output}`)));
  });
  try {
    return await swept;
  } finally {
    const exited = new Promise((r) => child.once('exit', r));
    child.kill('SIGTERM');
    await Promise.race([exited, new Promise((r) => setTimeout(r, 30_000))]);
  }
}

test('Settings shows retention off on the demo, and, once a worker swept with RETENTION_DAYS=30, the policy, the sweep and what it removed', async ({ page, browser }) => {
  test.setTimeout(240_000);
  // Sign-in is limited per address, counted in the database every web process shares: each
  // sign-in here comes from an address of its own, as in the other specs (sign-in.ts).
  await asDistinctClient(page);
  await page.goto('/settings');
  await signIn(page, DEMO.OWNER);
  const panel = page.getByRole('region', { name: 'Retention' });
  await expect(panel.getByTestId('retention-history-policy')).toContainText('Off: nothing is removed.');
  await expect(panel.getByTestId('retention-history-policy')).toContainText('RETENTION_DAYS');
  await expect(panel.getByTestId('retention-audit-policy')).toContainText('AUDIT_RETENTION_DAYS');

  const staged = await stageOldHistory();
  const [history, audit] = await sweepWithAWorker(e2eDatabaseUrl());
  expect(history).toContain('retention sweep (history) completed');
  expect(audit).toContain('retention sweep (audit) completed');
  expect(await sql(`SELECT id FROM "WorkflowExecution" WHERE id = ANY($1::uuid[])`, [staged])).toEqual([]);

  let server: WebServer | undefined;
  try {
    server = await startWebServer(e2eDatabaseUrl(), { ...RETENTION, TRUSTED_PROXIES: 'loopback' });
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const own = await context.newPage();
    await asDistinctClient(own);
    await own.goto(`${server.base}/settings`);
    await signIn(own, DEMO.OWNER);
    const retention = own.getByRole('region', { name: 'Retention' });
    await expect(retention.getByTestId('retention-history-policy')).toContainText('Kept 30 days');
    await expect(retention.getByTestId('retention-history-policy')).toContainText('RETENTION_DAYS=30');
    await expect(retention.getByTestId('retention-audit-policy')).toContainText('Kept 365 days');
    await expect(retention.getByTestId('retention-history-last')).toContainText('Last sweep');
    const removed = retention.getByTestId('retention-history-removed');
    const count = async (label: string) => Number((await removed.getByText(label, { exact: true }).locator('xpath=preceding-sibling::dt[1]').innerText()).replace(/,/g, ''));
    expect(await count('executions')).toBeGreaterThanOrEqual(25);
    expect(await count('step rows')).toBeGreaterThanOrEqual(50);
    expect(await count('emails')).toBeGreaterThanOrEqual(25);
    expect(await count('events')).toBeGreaterThanOrEqual(25);
    await expect(retention.getByTestId('retention-never-removed')).toContainText('failed ones not yet repaired');
    await expect(retention.getByTestId('retention-audit-removed')).toContainText('audit entries');
    await retention.scrollIntoViewIfNeeded();
    await own.screenshot({ path: shot('settings-retention-1280') });
    await retention.screenshot({ path: shot('settings-retention-panel-1280') });
    await context.close();
  } finally {
    await server?.stop();
  }
});
