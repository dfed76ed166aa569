/**
 * Cancelling many tasks at once, for client.cancelMany and a bulk cancel
 * (bulk.ts) alike: idle ones end CANCELLED at once, running ones are asked to
 * stop (CANCEL_REQUESTED; their signal fires), in two conditional changes —
 * a task claimed between them is caught by the second.
 */
import type { Scope } from '../core/scope.js';
import { CANCELLABLE_AT_ONCE } from '../core/status.js';
import type { ActionRecordInput, Store } from '../store/types.js';

export interface CancelManyResult {
  /** Ended at once (they were not running). */
  cancelled: number;
  /** Running: their workers were asked to stop. */
  cancelRequested: number;
  /** The rest, with their status (or NOT_FOUND). */
  notCancelled: { id: string; reason: string }[];
}

export async function cancelIds(store: Store, ids: readonly string[], scope: Scope, record: ActionRecordInput): Promise<CancelManyResult> {
  const idle = await store.changeStatus({ ids, scope, from: CANCELLABLE_AT_ONCE, to: 'CANCELLED', record });
  const rest = idle.filter((r) => !r.applied).map((r) => r.id);
  const running = rest.length > 0 ? await store.changeStatus({ ids: rest, scope, from: ['RUNNING'], to: 'CANCEL_REQUESTED', record }) : [];
  const result: CancelManyResult = { cancelled: idle.filter((r) => r.applied).length, cancelRequested: 0, notCancelled: [] };
  for (const r of running) {
    if (r.applied || r.status === 'CANCEL_REQUESTED') result.cancelRequested += 1;
    else result.notCancelled.push({ id: r.id, reason: r.status === null ? 'NOT_FOUND' : r.status });
  }
  return result;
}
