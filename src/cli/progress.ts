/**
 * Progress of long work (bulk submit, cleanup) on stderr, drawn by
 * cli-progress — only on a terminal: in a pipe or a log there is nothing to
 * redraw, and the command's final summary says it all.
 */
import cliProgress from 'cli-progress';
import type { CliIo } from './io.js';

export interface Progress {
  update(value: number, fields?: Record<string, unknown>): void;
  stop(): void;
}

const SILENT: Progress = { update: () => undefined, stop: () => undefined };

/** `format` uses cli-progress tokens: {bar} {percentage} {value} {total} {eta_formatted} and the fields given to update. */
export function startProgress(io: CliIo, options: { total: number; format: string; fields?: Record<string, unknown> }): Progress {
  if (io.stderr.isTTY !== true) return SILENT;
  const bar = new cliProgress.SingleBar(
    {
      stream: io.stderr,
      format: options.format,
      hideCursor: true,
      clearOnComplete: false,
      etaBuffer: 20,
    },
    cliProgress.Presets.shades_classic,
  );
  bar.start(options.total, 0, options.fields ?? {});
  return {
    update: (value, fields) => bar.update(value, fields ?? {}),
    stop: () => bar.stop(),
  };
}
