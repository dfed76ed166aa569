/**
 * The copying and counting of a move (move.ts): every table page by page in
 * key order from the source into the target, and the counts that verify it.
 */
import { GLOBAL_POLICY_KEY } from '../core/policy-keys.js';
import { Scope } from '../core/scope.js';
import type { TaskStatus } from '../core/status.js';
import type { TransferRow, TransferStore, TransferTableName } from '../store/transfer.js';
import type { Store } from '../store/types.js';

/** What a move copies, in this order (dead letters and history point at tasks; nothing enforces it, a reader may). */
export const MOVED_TABLES = [
  'policies',
  'schedules',
  'subscriptions',
  'adaptive',
  'limitChanges',
  'tokens',
  'sequences',
  'queueStats',
  'deadLetters',
  'tasks',
  'attempts',
  'failures',
  'actions',
  'dependencies',
  'steps',
  'logs',
] as const satisfies readonly TransferTableName[];
export type MovedTable = (typeof MOVED_TABLES)[number];

/** The tables whose rows a move copies while the source still runs, only those of finished tasks. */
const TASK_TABLES: ReadonlySet<MovedTable> = new Set(['tasks', 'attempts', 'failures', 'actions', 'dependencies', 'steps', 'logs']);

export interface CopySides {
  source: TransferStore;
  target: TransferStore;
  batchSize: number;
  /** Rows copied so far of the table, after each page. */
  onPage(table: MovedTable, copied: number, total: number): void;
}

/**
 * Copies every table; `finishedOnly`: task tables hold only terminal tasks' rows (the rest still changes).
 * Rows of the target the move must keep win over the source's: the GLOBAL policy (the source's is the
 * move's own stop, the target's the original copied before it) and a schedule's enabled flag (the source's
 * schedules are switched off by the move; the target's row holds the state they had).
 */
export async function copyTables(sides: CopySides, finishedOnly: boolean): Promise<Record<MovedTable, number>> {
  const copied = {} as Record<MovedTable, number>;
  const keep = finishedOnly ? null : await targetState(sides.target);
  for (const table of MOVED_TABLES) {
    const only = finishedOnly && TASK_TABLES.has(table);
    const total = await sides.source.countRows({ table, finishedOnly: only });
    copied[table] = 0;
    sides.onPage(table, 0, total);
    let after: TransferRow[keyof TransferRow][] | null = null;
    do {
      const page = await sides.source.exportRows({ table, after, limit: sides.batchSize, finishedOnly: only });
      const rows = keep ? keepTargetState(table, page.rows, keep) : page.rows;
      copied[table] += await sides.target.importRows({ table, rows });
      sides.onPage(table, copied[table], total);
      after = page.next;
    } while (after !== null);
  }
  return copied;
}

interface TargetState {
  hasGlobal: boolean;
  scheduleEnabled: Map<string, TransferRow['enabled']>;
}

async function targetState(target: TransferStore): Promise<TargetState> {
  const policies = await allRows(target, 'policies');
  const schedules = await allRows(target, 'schedules');
  return {
    hasGlobal: policies.some((row) => row.policy_key === GLOBAL_POLICY_KEY),
    scheduleEnabled: new Map(schedules.map((row) => [String(row.schedule_key), row.enabled ?? null])),
  };
}

function keepTargetState(table: MovedTable, rows: TransferRow[], keep: TargetState): TransferRow[] {
  if (table === 'policies') return rows.filter((row) => row.policy_key !== GLOBAL_POLICY_KEY);
  if (table !== 'schedules') return rows;
  return rows.map((row) => {
    const enabled = keep.scheduleEnabled.get(String(row.schedule_key));
    return enabled === undefined ? row : { ...row, enabled };
  });
}

/** Small tables (policies, schedules, subscriptions, the checkpoint) whole. */
export async function allRows(store: TransferStore, table: TransferTableName): Promise<TransferRow[]> {
  const rows: TransferRow[] = [];
  let after: TransferRow[keyof TransferRow][] | null = null;
  do {
    const page = await store.exportRows({ table, after, limit: 1000 });
    rows.push(...page.rows);
    after = page.next;
  } while (after !== null);
  return rows;
}

/** What verification compares: tasks per status, rows per table (policies but GLOBAL, which the move owns on the source). */
export interface SideCounts {
  tasks: Record<TaskStatus, number>;
  tables: Record<MovedTable, number>;
}

export async function countSide(store: Store, transfer: TransferStore): Promise<SideCounts> {
  const tables = {} as Record<MovedTable, number>;
  for (const table of MOVED_TABLES) {
    tables[table] =
      table === 'policies'
        ? (await allRows(transfer, 'policies')).filter((row) => row.policy_key !== GLOBAL_POLICY_KEY).length
        : await transfer.countRows({ table });
  }
  return { tasks: await store.countByStatus({ scope: Scope.global() }), tables };
}

/** The counts that differ, `{ "tasks.QUEUED": [source, target], … }`; empty when they all match. */
export function countDifferences(source: SideCounts, target: SideCounts): Record<string, [number, number]> {
  const differences: Record<string, [number, number]> = {};
  for (const [group, counts] of [
    ['tasks', source.tasks],
    ['tables', source.tables],
  ] as const) {
    const other = target[group] as Record<string, number>;
    for (const [name, count] of Object.entries(counts)) {
      if (count !== (other[name] ?? 0)) differences[`${group}.${name}`] = [count, other[name] ?? 0];
    }
  }
  return differences;
}
