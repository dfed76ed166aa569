/**
 * `tasklease move --from <url> --to <url>`: graduate from one database to
 * another without losing work (client/move.ts does it; this prints it). A
 * re-run after a crash or an interruption resumes where the move stopped.
 */
import { moveStore, type MoveProgress, type MoveReport } from '../../client/move.js';
import { openStore, redactUrl } from '../../store/open.js';
import type { Store } from '../../store/types.js';
import { action, type CliCommand } from '../command.js';
import { relativeTo } from '../context.js';
import type { CliIo } from '../io.js';
import { duration, integer } from '../parse.js';
import { startProgress, type Progress } from '../progress.js';

const PHASE_TEXT: Record<MoveProgress['phase'], string> = {
  migrated: 'migrating the target',
  'copied-finished': 'copying policies, schedules, tokens, dead letters and finished tasks (the source still runs)',
  'source-stopped': 'stopping claims and schedules on the source',
  drained: 'waiting for the leases held on the source',
  copied: 'copying everything else',
  verified: 'verifying counts',
};

export const moveCommand: CliCommand = {
  register(program, ctx) {
    program
      .command('move')
      .description(
        'move every task, its history, policies, schedules, tokens and dead letters to another database; the source stops claiming (re-run to resume)',
      )
      .requiredOption('--from <url>', 'the database moved from (sqlite:tasks.db, postgres://…, mysql://…)')
      .requiredOption('--to <url>', 'the database moved to (empty, or holding this move)')
      .option('--batch <n>', 'rows per page and per transaction, 1–10000', integer(1, 10_000), 500)
      .option('--wait-leases <duration>', 'how long to wait for tasks running on the source (e.g. 90s, 10m)', duration, 300_000)
      .action(
        action(ctx, async (flags: { from: string; to: string; batch: number; waitLeases: number }) => {
          const from = relativeTo(ctx.io.cwd, flags.from);
          const to = relativeTo(ctx.io.cwd, flags.to);
          const stores: Store[] = [];
          const progress = new MoveProgressView(ctx.io);
          try {
            const source = await openStore(from).then((store) => (stores.push(store), store));
            const target = await openStore(to).then((store) => (stores.push(store), store));
            const report = await moveStore({
              source,
              target,
              sourceName: describeSource(from),
              batchSize: flags.batch,
              waitLeasesMs: flags.waitLeases,
              onProgress: (event) => progress.update(event),
            });
            progress.stop();
            ctx.output.result(report, () => renderReport(report));
          } finally {
            progress.stop();
            await Promise.all(stores.map((store) => store.close()));
          }
        }),
      );
  },
};

/** A bar per table on a terminal; in a pipe or a log, one line per phase (nothing to redraw there). */
class MoveProgressView {
  private bar: Progress | null = null;
  private phase: string | null = null;
  private step: string | null = null;

  constructor(private readonly io: CliIo) {}

  update(event: MoveProgress): void {
    if (event.phase !== this.phase) {
      this.stop();
      this.phase = event.phase;
      this.step = null;
      this.io.stderr.write(`move: ${PHASE_TEXT[event.phase]}\n`);
    }
    if (event.step === null) return;
    if (event.step !== this.step) {
      this.stop();
      this.step = event.step;
      const unit = event.step === 'leases' ? 'leases held' : 'rows';
      this.bar = startProgress(this.io, { total: event.total, format: `  ${event.step.padEnd(12)} {bar} {value}/{total} ${unit}` });
    }
    this.bar?.update(event.done);
  }

  stop(): void {
    this.bar?.stop();
    this.bar = null;
  }
}

/**
 * The source as the checkpoint names it, so that a re-run with another spelling of the same URL still resumes:
 * no password, no connection tuning (poolSize, pooler…), the PostgreSQL schema kept.
 */
function describeSource(url: string): string {
  const redacted = redactUrl(url);
  const query = redacted.indexOf('?');
  if (query < 0) return redacted;
  const schema = new URLSearchParams(redacted.slice(query + 1)).get('schema');
  return `${redacted.slice(0, query)}${schema ? `?schema=${schema}` : ''}`;
}

function renderReport(report: MoveReport): string {
  const lines = [report.resumedAfter ? `resumed after phase ${report.resumedAfter}` : 'moved', '', 'tasks by status   source   target'];
  for (const [status, count] of Object.entries(report.source.tasks)) {
    lines.push(`  ${status.padEnd(16)}${String(count).padStart(7)}${String(report.target.tasks[status as keyof typeof report.target.tasks]).padStart(9)}`);
  }
  lines.push('', 'rows by table     source   target');
  for (const [table, count] of Object.entries(report.source.tables)) {
    lines.push(`  ${table.padEnd(16)}${String(count).padStart(7)}${String(report.target.tables[table as keyof typeof report.target.tables]).padStart(9)}`);
  }
  lines.push(
    '',
    `verified in ${(report.elapsedMs / 1000).toFixed(2)} s; the source claims nothing more (its GLOBAL policy is disabled): point workers and producers at the target`,
  );
  return lines.join('\n');
}
