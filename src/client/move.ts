/**
 * moveStore(): graduate from one database to another without losing work
 * (issue 25) — typically the embedded SQLite to PostgreSQL or MySQL, but any
 * pair of stores. In phases, each recorded in the target's
 * system_async_task_move row when done, so that a re-run after a crash at any
 * point resumes after the last phase recorded (every step is idempotent:
 * copies upsert by primary key, stopping the source sets what is already set):
 *
 *   migrated        the target's schema is current; a target holding tasks no move put there is refused
 *   copied-finished policies, schedules, tokens, dead letters and finished tasks with their history are
 *                   copied while the source's workers still run
 *   source-stopped  the source claims nothing more: its GLOBAL policy is disabled (every claim of every
 *                   dialect reads it) and its schedules are switched off; both stay so after the move, so
 *                   an old worker restarted on the source cannot run a moved task
 *   drained         no lease is held on the source: running tasks finished, were handed back, or expired and
 *                   were requeued by the sweep this move runs on the source while it waits
 *   copied          everything is copied again: what waited, what retried, what finished meanwhile
 *   verified        tasks per status and rows per table are equal on both sides (copied again first when not)
 *
 * Once verified, a re-run changes nothing and reports the counts as they are. Until then the target must not be
 * used (no workers, no producers): a copy overwrites its rows with the source's.
 */
import { InvalidOptionsError, MoveError } from '../core/errors.js';
import { GLOBAL_POLICY_KEY } from '../core/policy-keys.js';
import { checkKnownKeys } from '../core/validate.js';
import { bulkStoreOf } from '../store/bulk.js';
import { scheduleStoreOf } from '../store/schedules.js';
import { transferStoreOf, type TransferRow, type TransferStore } from '../store/transfer.js';
import type { Store } from '../store/types.js';
import { allRows, copyTables, MOVED_TABLES, countDifferences, countSide, type MovedTable, type SideCounts } from './move-copy.js';

export const MOVE_PHASES = ['migrated', 'copied-finished', 'source-stopped', 'drained', 'copied', 'verified'] as const;
export type MovePhase = (typeof MOVE_PHASES)[number];

/** The checkpoint row's key: one move into a database. */
export const MOVE_KEY = 'move';

export interface MoveOptions {
  source: Store;
  target: Store;
  /** How the source is named in the checkpoint row, for operators (the CLI gives its URL without password). */
  sourceName?: string;
  /** Rows per page read and per transaction written. Default 500. */
  batchSize?: number;
  /** How long to wait for the source's leases to end before giving up (MOVE_LEASES_HELD; a re-run waits again). Default 300000. */
  waitLeasesMs?: number;
  /** How often the wait looks at the source's leases (and sweeps it). Default 250. */
  pollMs?: number;
  /** Called as the move goes: each phase as it starts, each page copied, each look at the source's leases. */
  onProgress?: (progress: MoveProgress) => void;
  /** Called after each phase is recorded; what it throws stops the move there (tests inject crashes with it). */
  afterPhase?: (phase: MovePhase) => void | Promise<void>;
}

export interface MoveProgress {
  /** The phase being worked towards. */
  phase: MovePhase;
  /** The table being copied, or `leases` while waiting for them. */
  step: MovedTable | 'leases' | null;
  /** Rows copied of the table, or leases still held. */
  done: number;
  total: number;
}

export interface MoveReport {
  /** The phase a previous run had reached (null: this run started the move). */
  resumedAfter: MovePhase | null;
  /** Rows written per table by this run (a resumed or repeated copy writes rows again: upserts). */
  copied: Record<MovedTable, number>;
  source: SideCounts;
  target: SideCounts;
  elapsedMs: number;
}

const VERIFY_ROUNDS = 3;

export async function moveStore(options: MoveOptions): Promise<MoveReport> {
  const settings = resolveOptions(options);
  const started = Date.now();
  settings.onProgress({ phase: 'migrated', step: null, done: 0, total: 0 });
  await checkSourceSchema(options.source);
  await options.target.migrate();
  const run = new MoveRun(options, settings, await transferStoreOf(options.source), await transferStoreOf(options.target));
  const resumedAfter = await run.startOrResume();
  // A verified move is done: the target's workers may have changed it since, and copying the source again would undo their work.
  const from = resumedAfter === null ? 1 : MOVE_PHASES.indexOf(resumedAfter) + 1;
  if (resumedAfter === null) await settings.afterPhase('migrated');
  for (const phase of MOVE_PHASES.slice(from) as Exclude<MovePhase, 'migrated'>[]) {
    settings.onProgress({ phase, step: null, done: 0, total: 0 });
    const detail = await run.steps[phase]();
    await run.record(phase, detail ?? null);
    await settings.afterPhase(phase);
  }
  const [source, target] = await Promise.all([run.counts('source'), run.counts('target')]);
  return { resumedAfter, copied: run.copied, source, target, elapsedMs: Date.now() - started };
}

/** One run of a move: both stores and their transfer sides, what it copied, the steps of each phase. */
class MoveRun {
  readonly copied = Object.fromEntries(MOVED_TABLES.map((table) => [table, 0])) as Record<MovedTable, number>;

  constructor(
    private readonly options: MoveOptions,
    private readonly settings: Settings,
    private readonly source: TransferStore,
    private readonly target: TransferStore,
  ) {}

  /** What each phase does; each may run again after a crash. `verified` answers the counts it kept in the checkpoint. */
  readonly steps: Record<Exclude<MovePhase, 'migrated'>, () => Promise<unknown>> = {
    'copied-finished': () => this.copy('copied-finished', true),
    'source-stopped': () => stopSource(this.options.source),
    drained: async () => {
      // Again on a resumed move: an operator may have re-enabled the source since (idempotent, two small writes at most).
      await stopSource(this.options.source);
      await waitForLeases(this.options.source, this.settings, this.progress('drained'));
    },
    copied: async () => {
      // A claim that read the GLOBAL policy before it was disabled may commit after the wait saw no lease: look again after the copy.
      for (;;) {
        await this.copy('copied', false);
        const leased = await leasedOn(this.options.source);
        if (leased.tasks + leased.bulkOperations === 0) return;
        await waitForLeases(this.options.source, this.settings, this.progress('copied'));
      }
    },
    verified: () => this.verify(),
  };

  /** The phase a previous run recorded, or null after recording this move's start. */
  async startOrResume(): Promise<MovePhase | null> {
    const checkpoint = await this.checkpoint();
    if (checkpoint && checkpoint.source !== this.settings.sourceName) {
      throw new MoveError(
        'MOVE_TARGET_NOT_EMPTY',
        `the target holds a move from ${String(checkpoint.source)} (phase ${String(checkpoint.phase)}), not from ${this.settings.sourceName}: one move per target`,
        'migrated',
        { source: checkpoint.source, phase: checkpoint.phase },
      );
    }
    if (checkpoint) return checkpoint.phase as MovePhase;
    const tasks = await this.target.countRows({ table: 'tasks' });
    if (tasks > 0) {
      throw new MoveError(
        'MOVE_TARGET_NOT_EMPTY',
        `the target holds ${tasks} tasks that no move put there: move into an empty database (or schema), never into a queue in use`,
        'migrated',
        { tasks },
      );
    }
    await this.record('migrated', null);
    return null;
  }

  /** The checkpoint row: the phase done, the source, when; at `verified` the counts (`detail`, JSON). */
  async record(phase: MovePhase, detail: unknown): Promise<void> {
    const now = await this.options.target.now();
    const row = {
      move_key: MOVE_KEY,
      source: this.settings.sourceName,
      phase,
      detail: detail === null ? null : JSON.stringify(detail),
      started_at: (await this.checkpoint())?.started_at ?? now,
      updated_at: now,
    };
    await this.target.importRows({ table: 'moves', rows: [row] });
  }

  counts(side: 'source' | 'target'): Promise<SideCounts> {
    return countSide(this.options[side], this[side]);
  }

  private async checkpoint(): Promise<TransferRow | undefined> {
    return (await allRows(this.target, 'moves')).find((row) => row.move_key === MOVE_KEY);
  }

  private progress(phase: MovePhase) {
    return (step: MoveProgress['step'], done: number, total: number) => this.settings.onProgress({ phase, step, done, total });
  }

  private async copy(phase: MovePhase, finishedOnly: boolean): Promise<void> {
    const sides = { source: this.source, target: this.target, batchSize: this.settings.batchSize, onPage: this.progress(phase) };
    const counts = await copyTables(sides, finishedOnly);
    for (const [table, n] of Object.entries(counts)) this.copied[table as MovedTable] += n;
  }

  /** Counts on both sides; a difference is copied again (the source's sweep may still move a task) before it is an error. */
  private async verify(): Promise<{ source: SideCounts; target: SideCounts }> {
    for (let round = 1; ; round++) {
      const [source, target] = await Promise.all([this.counts('source'), this.counts('target')]);
      const differences = countDifferences(source, target);
      if (Object.keys(differences).length === 0) return { source, target };
      if (round >= VERIFY_ROUNDS) {
        const listed = Object.entries(differences).map(([name, [inSource, inTarget]]) => `${name}: ${inSource} vs ${inTarget}`);
        throw new MoveError(
          'MOVE_VERIFY_MISMATCH',
          `counts differ between source and target after ${round} copies (${listed.join(', ')}): were rows deleted on the source (cleanup) or tasks submitted to it during the move?`,
          'verified',
          { differences },
        );
      }
      await this.copy('verified', false);
    }
  }
}

interface Settings {
  sourceName: string;
  batchSize: number;
  waitLeasesMs: number;
  pollMs: number;
  onProgress: (progress: MoveProgress) => void;
  afterPhase: (phase: MovePhase) => void | Promise<void>;
}

function resolveOptions(options: MoveOptions): Settings {
  checkKnownKeys('moveStore', options, ['source', 'target', 'sourceName', 'batchSize', 'waitLeasesMs', 'pollMs', 'onProgress', 'afterPhase']);
  const integer = (field: keyof MoveOptions, value: number, min: number, max: number): number => {
    if (!Number.isInteger(value) || value < min || value > max)
      throw new InvalidOptionsError('moveStore', field, `must be an integer from ${min} to ${max} (got ${String(value)})`);
    return value;
  };
  if (!options.source || !options.target) throw new InvalidOptionsError('moveStore', options.source ? 'target' : 'source', 'is required (a Store)');
  if (options.source === options.target) throw new InvalidOptionsError('moveStore', 'target', 'must be another store than source');
  return {
    sourceName: options.sourceName ?? options.source.dialect,
    batchSize: integer('batchSize', options.batchSize ?? 500, 1, 10_000),
    waitLeasesMs: integer('waitLeasesMs', options.waitLeasesMs ?? 300_000, 0, 7 * 24 * 3_600_000),
    pollMs: integer('pollMs', options.pollMs ?? 250, 1, 60_000),
    onProgress: options.onProgress ?? (() => undefined),
    afterPhase: options.afterPhase ?? (() => undefined),
  };
}

/** The source is read column for column: its schema must be the one this code knows. */
async function checkSourceSchema(source: Store): Promise<void> {
  const version = await source.schemaVersion().catch(() => 0);
  if (version !== source.expectedSchemaVersion) {
    throw new MoveError(
      'MOVE_SOURCE_SCHEMA',
      `the source's schema is at version ${version}, this tasklease reads version ${source.expectedSchemaVersion}: run \`tasklease migrate\` on the source (or use the tasklease release its workers run)`,
      'migrated',
      { version, expected: source.expectedSchemaVersion },
    );
  }
}

/** No claim on the source from here on, nor a schedule's tick; what runs may finish. */
async function stopSource(source: Store): Promise<void> {
  const global = (await source.listPolicies()).find((policy) => policy.policyKey === GLOBAL_POLICY_KEY);
  if (!global || global.enabled) {
    const kept = {
      taskType: global?.taskType ?? null,
      maxConcurrency: global?.maxConcurrency ?? null,
      maxAttempts: global?.maxAttempts ?? null,
      retryBaseDelayMs: global?.retryBaseDelayMs ?? null,
    };
    await source.savePolicy({ policy: { policyKey: GLOBAL_POLICY_KEY, ...kept, enabled: false } });
  }
  const schedules = await scheduleStoreOf(source);
  for (const schedule of await schedules.listSchedules()) {
    if (schedule.enabled) await schedules.setScheduleEnabled({ key: schedule.key, enabled: false });
  }
}

/** Leases held on the source: its tasks' and its running bulk operations' (one changes tasks until it ends). */
async function leasedOn(source: Store): Promise<{ tasks: number; bulkOperations: number }> {
  const tasks = Object.values(await source.leasedCounts()).reduce((sum, n) => sum + n, 0);
  return { tasks, bulkOperations: await (await bulkStoreOf(source)).held() };
}

/**
 * Until no lease is held on the source, sweeping it meanwhile: a worker that died holding a lease has no
 * sweeper left to requeue its task once the lease expires, and the sweep never touches a live lease.
 */
async function waitForLeases(source: Store, settings: Settings, report: (step: 'leases', done: number, total: number) => void): Promise<void> {
  const deadline = Date.now() + settings.waitLeasesMs;
  let first: number | null = null;
  for (;;) {
    const leased = await leasedOn(source);
    const held = leased.tasks + leased.bulkOperations;
    first ??= held;
    report('leases', held, first);
    if (held === 0) return;
    if (Date.now() >= deadline) {
      const bulk = leased.bulkOperations > 0 ? ` (${leased.bulkOperations} of a running bulk operation: let it end or stop it)` : '';
      throw new MoveError(
        'MOVE_LEASES_HELD',
        `${held} leases were still held on the source after ${settings.waitLeasesMs} ms${bulk}: its workers still run them; run the move again to keep waiting (the source claims nothing new)`,
        'drained',
        { held, bulkOperations: leased.bulkOperations },
      );
    }
    await source.recover({ batchSize: settings.batchSize });
    await new Promise((resolve) => setTimeout(resolve, settings.pollMs));
  }
}
