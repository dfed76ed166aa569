/**
 * Sequences as an operator reads and steers them: which keys have tasks
 * waiting, which of those wait for an operator (a dead-lettered or paused
 * head), skipping a dead-lettered head, and a key's dead-letter policy. The
 * rule itself is the store's (store/rules/sequences.ts).
 */
import { NotFoundError, ValidationError } from '../core/errors.js';
import { Scope } from '../core/scope.js';
import { checkNoNul } from '../core/text.js';
import { SEQUENCE_ON_DEAD_LETTER, type SequenceOnDeadLetter, type SequenceSummary } from '../store/rules/sequences.js';
import type { Store } from '../store/types.js';

export type { SequenceOnDeadLetter, SequenceSummary };

export interface ListSequencesOptions {
  /** Only keys whose head waits for an operator (dead-lettered under BLOCK, or paused). */
  blockedOnly?: boolean;
  /** At most this many keys, in key order (1–1000, default 100). */
  limit?: number;
  scope?: Scope;
}

export class SequenceApi {
  constructor(private readonly store: Store) {}

  /** Keys with tasks waiting, each with its head and how many wait behind it. */
  list(options: ListSequencesOptions = {}): Promise<SequenceSummary[]> {
    const limit = options.limit ?? 100;
    if (!Number.isInteger(limit) || limit < 1 || limit > 1000) throw new ValidationError('limit must be an integer from 1 to 1000', 'limit');
    return this.store.listSequences({ scope: options.scope ?? Scope.global(), blockedOnly: options.blockedOnly === true, limit });
  }

  /** One key as it stands (NOT_FOUND when no task ever took it, or none in scope does now). */
  async get(key: string, options: { scope?: Scope } = {}): Promise<SequenceSummary> {
    const [found] = await this.store.listSequences({ scope: options.scope ?? Scope.global(), key: checkKey(key), limit: 1 });
    if (!found) throw new NotFoundError('sequence', key);
    return found;
  }

  /**
   * The key's dead-lettered head stops holding it: the next task runs. The head stays a dead letter (replayable,
   * and then it runs beside the key's new head: replay a skipped task only when its order no longer matters).
   * `skipped` is null when the key's head is not dead-lettered: nothing is skipped, nothing changes.
   */
  async skip(key: string): Promise<{ skipped: string | null }> {
    const { skipped } = await this.store.skipSequenceHead({ key: checkKey(key) });
    return { skipped };
  }

  /** What the key's dead-lettered head does to the tasks behind it from now on; SKIP behind one lets the next run at once. */
  async setPolicy(key: string, onDeadLetter: SequenceOnDeadLetter): Promise<void> {
    if (!SEQUENCE_ON_DEAD_LETTER.includes(onDeadLetter)) {
      throw new ValidationError(`onDeadLetter must be one of ${SEQUENCE_ON_DEAD_LETTER.join(', ')}`, 'onDeadLetter');
    }
    const { found } = await this.store.setSequencePolicy({ key: checkKey(key), onDeadLetter });
    if (!found) throw new NotFoundError('sequence', key);
  }
}

function checkKey(key: string): string {
  if (typeof key !== 'string' || key.length === 0 || key.length > 255)
    throw new ValidationError('a sequence key is a string of 1 to 255 characters', 'sequenceKey');
  checkNoNul('sequenceKey', key);
  return key;
}
