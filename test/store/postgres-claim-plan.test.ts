/**
 * The PostgreSQL claim's plans do not depend on luck (claim.ts, "Plans"):
 * no statement of tasklease_claim reads the whole task table or is
 * compiled by JIT, and its claiming query walks the claim index — at 10
 * rows, right after a bulk insert of 100,000 with no ANALYZE, and at 100,000
 * with fresh statistics.
 *
 * The trap is the plan cache: PL/pgSQL plans each statement of a function
 * once per session and keeps the plan (a statement without parameters
 * always; the others once the server settles on their generic plan, which
 * it may do after five calls). A bulk insert invalidates nothing. So the
 * sessions here claim first at 10 rows, with the statistics of a 10-row
 * table, and keep claiming after the bulk insert, beside sessions that start
 * then; one session of each kind forces the generic plans that the server
 * may choose on its own. Autovacuum is off for the table, so nothing
 * analyzes it behind the test's back. Plans come from auto_explain (nested
 * statements, as notices to the claiming session), each claim in a
 * transaction that is rolled back: nothing is leased, every claim sees the
 * same rows.
 */
import pg from 'pg';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { CLAIM_ARG_COUNT, claimArgs } from '../../src/store/postgres/claim.js';
import { PostgresStore } from '../../src/store/postgres/store.js';
import type { ClaimParams } from '../../src/store/types.js';
import { describeOnServer } from '../helpers/factory.js';
import { createTestSchema, PG_URL, postgresAvailable, type TestSchema } from '../helpers/postgres.js';
import { TABLE_SCAN } from './conformance-plan.js';
import { claimParams } from './fixtures.js';

const available = await postgresAvailable('test/store/postgres-claim-plan.test.ts');
const BULK = 100_000;
/** More than the five custom plans after which the server may settle on a statement's generic plan. */
const CALLS = 6;
/** How workers claim (fair share on, below the slot size: the leases are read before the locks), and a claim above the slot size (under the schema's lock). */
const SHAPES: Record<string, ClaimParams> = {
  'a worker claim': claimParams({ taskTypes: ['flood'], limit: 10, liveWithinMs: 30_000 }),
  'a claim of 100': claimParams({ taskTypes: ['flood'], limit: 100 }),
};
const CLAIM_INDEX_READ = /Index Scan using ix_system_async_task_claim on system_async_task t\b/;

interface Session {
  name: string;
  /** On generic plans from the first call (plan_cache_mode = force_generic_plan): one call shows the plan it keeps. */
  generic: boolean;
  client: pg.Client;
  notices: string[];
}

describeOnServer(available, 'PostgreSQL', 'PostgreSQL: the claim plan', () => {
  let schema: TestSchema;
  let store: PostgresStore;
  const sessions: Session[] = [];

  beforeAll(async () => {
    schema = await createTestSchema();
    store = new PostgresStore({ connectionString: PG_URL, schema: schema.name });
    await store.migrate();
    await schema.query(`ALTER TABLE "${schema.name}".system_async_task SET (autovacuum_enabled = false)`);
  });
  afterAll(async () => {
    await Promise.all(sessions.map((session) => session.client.end()));
    await store?.close();
    await schema?.drop();
  });

  async function openSession(name: string, generic: boolean): Promise<Session> {
    const client = new pg.Client({ connectionString: PG_URL });
    await client.connect();
    const session: Session = { name, generic, client, notices: [] };
    client.on('notice', (notice: { message?: string }) => session.notices.push(notice.message ?? ''));
    await client.query("LOAD 'auto_explain'");
    await client.query("SET auto_explain.log_min_duration = 0; SET auto_explain.log_nested_statements = on; SET auto_explain.log_level = 'notice'");
    if (generic) await client.query('SET plan_cache_mode = force_generic_plan');
    sessions.push(session);
    return session;
  }

  const insert = (count: number) =>
    schema.query(
      `INSERT INTO "${schema.name}".system_async_task (id, task_type, status, priority, payload_json, available_at, max_attempts, create_time, update_time)
       SELECT "${schema.name}".tasklease_uuid_v7(), 'flood', 'QUEUED', i % 3, '{}', now(), 3, now(), now() FROM generate_series(1, $1) i`,
      [count],
    );

  /** The plans of every statement of one claim, rolled back. */
  async function claimPlans(session: Session, params: ClaimParams): Promise<string[]> {
    const placeholders = Array.from({ length: CLAIM_ARG_COUNT }, (_, i) => `$${i + 1}`).join(', ');
    await session.client.query('BEGIN');
    session.notices.length = 0;
    try {
      await session.client.query(`SELECT id FROM "${schema.name}".tasklease_claim(${placeholders})`, claimArgs(params, false));
      return [...session.notices];
    } finally {
      await session.client.query('ROLLBACK');
    }
  }

  /** Each session claims CALLS times in each shape; every plan is checked, and each failure says where (the first of each session and shape). */
  async function expectIndexPlans(step: string, checked: readonly Session[]): Promise<void> {
    const problems: string[] = [];
    for (const session of checked) {
      for (const [shape, params] of Object.entries(SHAPES)) {
        const found: string[] = [];
        for (let call = 1; call <= (session.generic ? 1 : CALLS); call++) {
          const plans = await claimPlans(session, params);
          const where = `${step}, ${session.name}, ${shape}, call ${call}`;
          for (const plan of plans.filter((text) => TABLE_SCAN.test(text))) found.push(`${where}: reads the whole task table:\n${summary(plan)}`);
          // Sequential scans are priced out, not impossible: one left in a plan (the worker registry) must not set off JIT.
          for (const plan of plans.filter((text) => /^JIT:/m.test(text))) found.push(`${where}: compiled by JIT:\n${summary(plan)}`);
          const claiming = plans.find((text) => text.includes('candidates'));
          if (!claiming || !CLAIM_INDEX_READ.test(claiming))
            found.push(`${where}: the claiming query does not walk the claim index:\n${summary(claiming ?? plans.join('\n'))}`);
        }
        problems.push(...found.slice(0, 1));
      }
    }
    expect(problems, 'claims whose plans read the task table, skip the claim index or use JIT').toEqual([]);
  }

  it('at 10 rows (analyzed: the statistics of a tiny table) no claim reads the task table, and the claiming query walks the claim index', async () => {
    await insert(10);
    await schema.query(`ANALYZE "${schema.name}".system_async_task`);
    await openSession('a session of the default plan mode', false);
    await openSession('a session on generic plans', true);
    await expectIndexPlans('10 rows', sessions);
  });

  it(`right after a bulk insert of ${BULK.toLocaleString('en')} rows with no ANALYZE, in the sessions that claimed at 10 rows and in new ones`, async () => {
    await insert(BULK);
    const [stats] = await schema.query<{ reltuples: number }>(`SELECT reltuples FROM pg_class WHERE oid = '"${schema.name}".system_async_task'::regclass`);
    expect(stats!.reltuples, 'the statistics still describe the 10-row table').toBeLessThanOrEqual(10);
    await openSession('a session opened after the insert', false);
    await openSession('a session on generic plans opened after the insert', true);
    await expectIndexPlans('after the bulk insert', sessions);
  });

  it(`at ${(BULK + 10).toLocaleString('en')} rows, analyzed`, async () => {
    await schema.query(`ANALYZE "${schema.name}".system_async_task`);
    await expectIndexPlans('analyzed', sessions);
  });
});

/** The first line of a plan's query and its scans of the task table. */
function summary(plan: string): string {
  const query = /Query Text: ([^\n]*)/.exec(plan)?.[1]?.trim() ?? '';
  const scans = plan.split('\n').filter((line) => /Scan.* on system_async_task [a-z_0-9]+ /.test(line) || /Seq Scan/.test(line));
  return [`  ${query.slice(0, 100)}`, ...scans.map((line) => `    ${line.trim().slice(0, 160)}`)].join('\n');
}
