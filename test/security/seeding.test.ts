import { hashPassword } from 'better-auth/crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { DEMO_USERS, seedDemoOnce, type DemoSeedRequest } from '../../prisma/seed';
import { closeDb, createDb } from '../../server/db';
import { migrate } from '../../server/migrator';
import { emptyDatabase, freshDatabase, type TestDatabase } from '../support/database';

// The demo project's logins share a published password. The decision
// `npm start` and `cli seed` take (seedDemoOnce), against real databases: seed on the
// first start of an empty embedded database or when asked, honour SEED_DEMO=0, never
// recreate on start what an owner deleted, never touch a person's credentials, and refuse
// a console with an https PUBLIC_URL unless forced.

const opened: TestDatabase[] = [];
async function database(kind: 'fresh' | 'empty' = 'fresh'): Promise<TestDatabase> {
  const t = kind === 'fresh' ? await freshDatabase() : await emptyDatabase();
  opened.push(t);
  return t;
}
// Each test's databases go when it ends: a seed runs on up to ten connections per
// database, and kept to the end of the file they held 70 of the server's 100 slots while
// other files ran beside this one (CI: "too many clients already").
afterEach(async () => {
  for (const t of opened.splice(0)) await t.drop();
});

const start = (over: Partial<Extract<DemoSeedRequest, { by: 'npm start' }>> = {}): DemoSeedRequest => ({ by: 'npm start', embedded: true, ...over });
const HTTPS = 'https://waypost.example.com';

async function counts(t: TestDatabase) {
  const [row] = await t.query(`
    SELECT (SELECT count(*)::int FROM "Project") AS projects, (SELECT count(*)::int FROM "User") AS users,
           (SELECT count(*)::int FROM "Account") AS accounts, (SELECT count(*)::int FROM "WorkflowExecution") AS executions,
           (SELECT count(*)::int FROM "DemoSeed") AS marks`);
  return row as { projects: number; users: number; accounts: number; executions: number; marks: number };
}

describe('npm start', () => {
  it('SEED_DEMO=0 seeds nothing, even on the first start of an empty embedded database, and later starts remember it', async () => {
    const t = await database();
    const run = await seedDemoOnce(t.db, start({ seedDemo: '0' }));
    expect(run).toMatchObject({ outcome: 'OFF', created: false, logins: [] });
    expect(await counts(t)).toEqual({ projects: 0, users: 0, accounts: 0, executions: 0, marks: 1 });
    expect(await t.query(`SELECT "seededBy", declined FROM "DemoSeed"`)).toEqual([{ seededBy: 'npm start', declined: true }]);

    // A later start that omits SEED_DEMO=0, on the database still empty, does not seed.
    const later = await seedDemoOnce(t.db, start());
    expect(later).toMatchObject({ outcome: 'DECLINED_BEFORE', created: false, logins: [] });
    expect(later.message).toContain('SEED_DEMO=0');
    expect(await counts(t)).toMatchObject({ projects: 0, users: 0, marks: 1 });

    // Asked for explicitly, it is seeded, and from then on it counts as seeded.
    expect(await seedDemoOnce(t.db, start({ seedDemo: '1' }))).toMatchObject({ outcome: 'SEEDED', created: true });
    expect(await t.query(`SELECT declined FROM "DemoSeed"`)).toEqual([{ declined: false }]);
    expect(await seedDemoOnce(t.db, start())).toMatchObject({ outcome: 'SEEDED_BEFORE' });
  });

  it('seeds the first start of an empty embedded database once: a second start, or a deleted demo project, is not seeded again', async () => {
    const t = await database();
    const first = await seedDemoOnce(t.db, start());
    expect(first).toMatchObject({ outcome: 'SEEDED', created: true, skipped: [] });
    expect(first.logins.map((l) => l.email).sort()).toEqual(DEMO_USERS.map((u) => u.email).sort());
    const after = await counts(t);
    expect(after).toMatchObject({ projects: 1, users: 4, accounts: 4, marks: 1 });
    expect(await t.query(`SELECT "seededBy" FROM "DemoSeed"`)).toEqual([{ seededBy: 'npm start' }]);

    const second = await seedDemoOnce(t.db, start());
    expect(second).toMatchObject({ outcome: 'SEEDED_BEFORE', created: false, logins: [] });
    expect(await counts(t)).toEqual(after);

    // The owner deletes the demo project: no start brings it back, whatever SEED_DEMO says.
    await t.query(`DELETE FROM "Project" WHERE name = 'demo'`);
    for (const seedDemo of [undefined, '1', 'force'] as const) {
      expect(await seedDemoOnce(t.db, start({ seedDemo })), String(seedDemo)).toMatchObject({ outcome: 'SEEDED_BEFORE' });
    }
    expect(await t.query(`SELECT name FROM "Project"`)).toEqual([]);

    // A person asking (`cli seed`) does recreate it.
    expect(await seedDemoOnce(t.db, { by: 'cli seed', force: false })).toMatchObject({ outcome: 'SEEDED', created: true });
    expect(await t.query(`SELECT name FROM "Project"`)).toEqual([{ name: 'demo' }]);
  });

  it('an external database is seeded only with SEED_DEMO=1; an embedded one that holds people only when asked', async () => {
    const external = await database();
    expect(await seedDemoOnce(external.db, start({ embedded: false }))).toMatchObject({ outcome: 'NOT_ASKED' });
    expect(await counts(external)).toMatchObject({ projects: 0, marks: 0 });

    const used = await database();
    await used.query(`INSERT INTO "User" (email, name) VALUES ('ed@example.com', 'Ed')`);
    expect(await seedDemoOnce(used.db, start())).toMatchObject({ outcome: 'NOT_EMPTY' });
    expect(await counts(used)).toMatchObject({ projects: 0, users: 1, marks: 0 });

    expect(await seedDemoOnce(external.db, start({ embedded: false, seedDemo: '1' }))).toMatchObject({ outcome: 'SEEDED' });
    expect(await counts(external)).toMatchObject({ projects: 1, marks: 1 });
  });

  it('refuses a console whose PUBLIC_URL is https unless SEED_DEMO=force', async () => {
    const t = await database();
    for (const request of [start({ publicUrl: HTTPS }), start({ publicUrl: HTTPS, seedDemo: '1' }), start({ embedded: false, publicUrl: HTTPS, seedDemo: '1' })]) {
      const run = await seedDemoOnce(t.db, request);
      expect(run).toMatchObject({ outcome: 'REFUSED_HTTPS', created: false, logins: [] });
      expect(run.message).toMatch(/PUBLIC_URL is https/);
    }
    expect(await seedDemoOnce(t.db, { by: 'cli seed', force: false, publicUrl: HTTPS })).toMatchObject({ outcome: 'REFUSED_HTTPS' });
    expect(await counts(t)).toEqual({ projects: 0, users: 0, accounts: 0, executions: 0, marks: 0 });
    // http is a console on this machine: seeded as ever.
    expect(await seedDemoOnce(t.db, start({ publicUrl: 'http://localhost:3000' }))).toMatchObject({ outcome: 'SEEDED' });

    const forced = await database();
    expect(await seedDemoOnce(forced.db, start({ publicUrl: HTTPS, seedDemo: 'force' }))).toMatchObject({ outcome: 'SEEDED' });
  });

  it('two starts at once on one fresh database: exactly one seeds, the other waits and does not (repeated)', async () => {
    for (let round = 0; round < 2; round++) {
      const t = await database();
      const clients = [0, 1, 2].map(() => createDb(t.url, { poolSize: 4, applicationName: 'waypost-seed-race' }));
      try {
        const runs = await Promise.all(clients.map((db) => seedDemoOnce(db, start())));
        expect(runs.map((r) => r.outcome).sort(), `round ${round}`).toEqual(['SEEDED', 'SEEDED_BEFORE', 'SEEDED_BEFORE']);
        expect(await counts(t)).toMatchObject({ projects: 1, users: 4, accounts: 4, marks: 1 });
      } finally {
        await Promise.all(clients.map((db) => closeDb(db)));
      }
    }
  });
});

describe('a person who already has a demo email', () => {
  it('keeps their credentials: no password account and no membership is added; the other logins are seeded', async () => {
    const t = await database();
    const owner = DEMO_USERS.find((u) => u.role === 'OWNER')!.email;
    const viewer = DEMO_USERS.find((u) => u.role === 'VIEWER')!.email;
    const [withAccount] = await t.query(`INSERT INTO "User" (email, name) VALUES ($1, 'A real owner') RETURNING id`, [owner]);
    const ownHash = await hashPassword('their own password');
    await t.query(`INSERT INTO "Account" ("userId", "accountId", "providerId", password) VALUES ($1, $1, 'credential', $2)`, [withAccount.id, ownHash]);
    // Someone invited, who has not set a password yet (no account at all).
    const [withoutAccount] = await t.query(`INSERT INTO "User" (email, name) VALUES ($1, 'Invited') RETURNING id`, [viewer]);
    const [theirs] = await t.query(`INSERT INTO "Project" (name) VALUES ('theirs') RETURNING id`);
    await t.query(`INSERT INTO "Membership" ("userId", "projectId", role) VALUES ($1, $2, 'OWNER')`, [withAccount.id, theirs.id]);

    const run = await seedDemoOnce(t.db, { by: 'cli seed', force: false });
    expect(run).toMatchObject({ outcome: 'SEEDED', created: true });
    expect(run.skipped.sort()).toEqual([owner, viewer].sort());
    expect(run.logins.map((l) => l.role).sort()).toEqual(['MARKETER', 'OPERATOR']);
    expect(run.message).toContain(`${owner} already belongs to a person: left as it was`);

    expect(await t.query(`SELECT "providerId", password FROM "Account" WHERE "userId" = $1`, [withAccount.id])).toEqual([
      { providerId: 'credential', password: ownHash },
    ]);
    expect(await t.query(`SELECT id FROM "Account" WHERE "userId" = $1`, [withoutAccount.id])).toEqual([]);
    const memberships = await t.query(
      `SELECT u.email, p.name, m.role FROM "Membership" m JOIN "User" u ON u.id = m."userId" JOIN "Project" p ON p.id = m."projectId" ORDER BY p.name, u.email`,
    );
    expect(memberships).toEqual([
      { email: 'marketer@demo.waypost.dev', name: 'demo', role: 'MARKETER' },
      { email: 'operator@demo.waypost.dev', name: 'demo', role: 'OPERATOR' },
      { email: owner, name: 'theirs', role: 'OWNER' },
    ]);
    expect(await t.query(`SELECT name FROM "User" WHERE email = $1`, [owner])).toEqual([{ name: 'A real owner' }]);
  });
});

describe('the DemoSeed migration', () => {
  it('marks a database that held projects or people as past its first start; an empty one stays unseeded', async () => {
    const previous = '20261201001500_sign_in_failure';
    const used = await database('empty');
    await migrate(used.url, { until: previous });
    await used.query(`INSERT INTO "Project" (name) VALUES ('acme')`);
    await migrate(used.url);
    expect(await used.query(`SELECT "seededBy" FROM "DemoSeed"`)).toEqual([{ seededBy: 'before DemoSeed' }]);
    expect(await seedDemoOnce(used.db, start({ seedDemo: '1' }))).toMatchObject({ outcome: 'SEEDED_BEFORE' });

    const blank = await database('empty');
    await migrate(blank.url, { until: previous });
    await migrate(blank.url);
    expect(await blank.query(`SELECT * FROM "DemoSeed"`)).toEqual([]);
  });
});
