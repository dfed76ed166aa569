/**
 * The dead-letter queue: list, size, replay (one or a batch) and
 * archive-and-clean. A replay requeues the original task with a fresh attempt
 * cycle and keeps the link (replay_task_id, replayed_at) on the dead letter;
 * a replay and an archive are recorded on the task's action history, with who.
 */
import { ValidationError } from '../core/errors.js';
import { Scope } from '../core/scope.js';
import type { DeadLetter, ReplayResult, Store } from '../store/types.js';
import { checkActor, LIBRARY_ACTOR, type Actor, type ActorOption } from './actors.js';
import { inBatches, retentionCutoff } from './cleanup.js';

export const MAX_IDS_PER_CALL = 1000;

export interface DeadLetterListOptions {
  scope?: Scope;
  taskType?: string;
  /** moved_at ≥ from */
  from?: Date;
  /** moved_at < to */
  to?: Date;
  /** 1–1000, default 50. */
  limit?: number;
  cursor?: string;
}

export interface DeadLetterCleanOptions {
  /** Delete dead letters archived more than this many days ago (0: every archived one)… */
  retentionDays?: number;
  /** …or give the cut-off itself. */
  archivedBefore?: Date;
  /** Rows per transaction, 1–10000. Default 500. */
  batchSize?: number;
  /** Stop after this many batches (a bounded run); default: until nothing is left. */
  maxBatches?: number;
  /** Called after each batch with the running count (progress bars). */
  onBatch?: (deleted: number) => void;
}

export interface DeadLetterCleanResult {
  deleted: number;
  batches: number;
}

export class DeadLetterApi {
  constructor(
    private readonly store: Store,
    /** Who replays and archives are recorded as (on the dead letter's task) unless a call says. */
    private readonly actor: Actor = LIBRARY_ACTOR,
  ) {}

  list(options: DeadLetterListOptions = {}): Promise<DeadLetter[]> {
    const limit = options.limit ?? 50;
    if (!Number.isInteger(limit) || limit < 1 || limit > 1000) throw new ValidationError('limit must be an integer from 1 to 1000', 'limit');
    return this.store.listDeadLetters({
      scope: options.scope ?? Scope.global(),
      taskType: options.taskType ?? null,
      movedAfter: options.from ?? null,
      movedBefore: options.to ?? null,
      limit,
      cursor: options.cursor ?? null,
    });
  }

  /** Dead letters neither replayed nor archived. */
  size(options: { scope?: Scope; taskType?: string } = {}): Promise<number> {
    return this.store.countDeadLetters({ scope: options.scope ?? Scope.global(), taskType: options.taskType ?? null });
  }

  async replay(id: string, options: { scope?: Scope } & ActorOption = {}): Promise<ReplayResult> {
    return (await this.replayBatch([id], options)).results[0]!;
  }

  /** Replays up to 1000 dead letters in one transaction; says for each why it was not replayed. */
  async replayBatch(ids: readonly string[], options: { scope?: Scope } & ActorOption = {}): Promise<{ replayed: number; results: ReplayResult[] }> {
    checkIds(ids);
    const results = await this.store.replayDeadLetters({ ids, scope: options.scope ?? Scope.global(), actor: this.actorOf(options, 'replay') });
    return { replayed: results.filter((r) => r.outcome === 'REPLAYED').length, results };
  }

  /** Takes dead letters that cannot be fixed out of the queue; they stay on record (archived_at). */
  async archive(ids: readonly string[], options: { scope?: Scope } & ActorOption = {}): Promise<number> {
    checkIds(ids);
    return this.store.archiveDeadLetters({ ids, scope: options.scope ?? Scope.global(), actor: this.actorOf(options, 'archive') });
  }

  private actorOf(options: ActorOption, where: string): Actor {
    return options.actor === undefined ? this.actor : checkActor(options.actor, where);
  }

  /**
   * Deletes archived dead letters archived before the retention, in batches
   * (the seed's archiveAndClean). Dead letters still waiting, or replayed but
   * not archived, are never deleted: archiving is the operator's decision.
   */
  async clean(options: DeadLetterCleanOptions): Promise<DeadLetterCleanResult> {
    const archivedBefore = await retentionCutoff(this.store, options?.retentionDays, options?.archivedBefore, {
      name: 'deadLetters.clean',
      before: 'archivedBefore',
      minDays: 0,
      why: 'a retention cannot be negative',
    });
    let deleted = 0;
    const batches = await inBatches(options, async (batchSize) => {
      const rows = await this.store.purgeDeadLetters({ archivedBefore, batchSize });
      deleted += rows;
      options.onBatch?.(deleted);
      return rows;
    });
    return { deleted, batches };
  }
}

export function checkIds(ids: readonly string[]): void {
  if (!Array.isArray(ids)) throw new ValidationError('ids must be an array', 'ids');
  if (ids.length > MAX_IDS_PER_CALL) {
    throw new ValidationError(`at most ${MAX_IDS_PER_CALL} ids per call, got ${ids.length}: split the batch`, 'ids');
  }
  for (const id of ids)
    if (typeof id !== 'string' || id.length === 0 || id.length > 200) throw new ValidationError('every id must be a non-empty string', 'ids');
}
