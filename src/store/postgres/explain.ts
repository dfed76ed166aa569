/**
 * The plan of the claim as the database runs it (diagnostics; the fault
 * suite checks it uses the claim index under a flood). The claim's query
 * lives inside tasklease_claim (claim.ts), where EXPLAIN cannot reach it, so
 * auto_explain reports the plans of the function's own statements — as
 * notices to this session only — while one claim runs in a transaction that
 * is rolled back: nothing is leased. Needs the right to LOAD auto_explain
 * (a superuser, or the library under $libdir/plugins).
 */
import type { ClaimPlan } from '../types.js';
import { withClient, type PgContext } from './connection.js';

export function explainClaim(ctx: PgContext, taskType: string): Promise<ClaimPlan> {
  return withClient(ctx.pool, 'explaining the claim', async (client, markBroken) => {
    const notices: string[] = [];
    const collect = (notice: { message?: string }) => notices.push(notice.message ?? '');
    client.on('notice', collect);
    try {
      await client.query('BEGIN');
      await client.query("LOAD 'auto_explain'");
      await client.query(
        "SET LOCAL auto_explain.log_min_duration = 0; SET LOCAL auto_explain.log_nested_statements = on; SET LOCAL auto_explain.log_level = 'notice'",
      );
      await client.query(`SELECT * FROM ${ctx.schema}.tasklease_claim('explain', $1, 10, 1000, 1000000, 1000000)`, [[taskType]]);
      // The function's RETURN QUERY is the statement that reads the task table in claim order.
      const plan = notices.find((text) => text.includes('RETURN QUERY') || text.includes('candidates')) ?? notices.join('\n');
      return { plan };
    } finally {
      await client.query('ROLLBACK').catch(() => undefined);
      client.off('notice', collect);
      markBroken(); // auto_explain stays loaded in this session: do not hand it back to the pool
    }
  });
}
