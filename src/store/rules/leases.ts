/**
 * When a lease still holds, beyond its fence (lease_owner, attempt_count,
 * lease_token, a leased status): the writes a worker makes *during* an attempt — a renewal
 * (heartbeat, ctx.checkCancellation, the failure check) and a progress write
 * — also need lease_until > now by the database clock. An expired lease that
 * no sweep has taken yet is not its holder's any more: renewing it would
 * revive a lease the worker itself may have given up on its local deadline
 * (a blocked event loop frees, its heartbeat fires first), and would let a
 * handler run on past its lease, so the answer is "lost" and nothing changes.
 * Progress follows the renewal: a write that succeeds tells the handler its
 * lease holds, and it must not say so of an expired one.
 *
 * Writes that *end* an attempt — its outcome, a hand-back of a task never
 * started — need only the fence: they may still end an expired lease nobody
 * swept. Nobody else can hold the task then (a claim takes only QUEUED and
 * RETRY_WAIT rows, which the sweep makes), the attempt's work is done or was
 * never begun, and refusing it would only make the sweep run it again.
 */
import { randomBytes } from 'node:crypto';
import { LEASED_SQL } from './sql.js';

/**
 * A claim's lease token: drawn at random by every claim, written to the rows
 * it leases, and part of every fence. Owner and attempt alone cannot tell
 * apart two claims of one task by one worker with the same attempt number,
 * which happens when a claim is lost (a database crash before its commit
 * reached the disk) and the worker claims the task again: the first
 * execution's late writes would pass the fence. With the token they cannot,
 * which is what lets PostgreSQL commit a claim without waiting for its WAL
 * flush (postgres/claim.ts).
 */
export function newLeaseToken(): string {
  // A random prefix per process and a counter: unique per claim without a call into the random source each time
  // (randomBytes was 19 µs a claim, 2 % of a SQLite drain under binding limits). Not a secret: a fence.
  if (tokenCounter === 0xffffffff) [tokenPrefix, tokenCounter] = [randomBytes(4).toString('hex'), 0];
  tokenCounter += 1;
  return tokenPrefix + tokenCounter.toString(16).padStart(8, '0');
}
let tokenPrefix = randomBytes(4).toString('hex');
let tokenCounter = 0;

/** The fence of a write about a held lease, on the row alias `row` ('' or 't.'): three placeholders (or SQL texts). */
export function fenceSql(owner: string, attempt: string, token: string, row = ''): string {
  return `${row}lease_owner = ${owner} AND ${row}attempt_count = ${attempt} AND ${row}lease_token = ${token} AND ${row}status IN ${LEASED_SQL}`;
}

/** The lease has not expired by the database clock: `now` is the dialect's now (SQL text or a placeholder). */
export function liveLeaseSql(now: string, row = ''): string {
  return `${row}lease_until > ${now}`;
}
