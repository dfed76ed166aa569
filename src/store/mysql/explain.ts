/**
 * The plan of the claim's candidate read (claim.ts), as EXPLAIN shows it,
 * with the claim's own clock variable set: the diagnostics' and the fault
 * suite's check that the claim reads the claim index, not the table.
 */
import type { ClaimPlan } from '../types.js';
import { candidatesStatement } from './claim.js';
import type { MysqlDatabase } from './connection.js';

export async function explainClaim(db: MysqlDatabase, taskType: string): Promise<ClaimPlan> {
  const { sql, values } = candidatesStatement(taskType, 10);
  const rows = await db.run(async (conn) => {
    await db.exec(conn, 'SET @tasklease_now = NOW(3)');
    return db.rows(conn, `EXPLAIN ${sql}`, values);
  });
  return { plan: rows.map((row) => JSON.stringify(row)).join('\n') };
}
