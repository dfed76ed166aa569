/** The result lines and the small helpers every report reads them with. */
import type { ResultLine } from './types.js';

export interface SkipLine {
  system: string;
  workload: string;
  skipped: string;
}

export type Line = ResultLine | SkipLine;

export const isResult = (line: Line): line is ResultLine => 'value' in line;

/** The line a table cell or a target reads: the summary over the rounds, or a once-only workload's line. */
export function find(lines: Line[], system: string, workload: string, backlog?: number): ResultLine | undefined {
  return lines
    .filter(isResult)
    .find((l) => l.round === undefined && l.system === system && l.workload === workload && (backlog === undefined || l.backlog === backlog));
}

export function inRound(lines: Line[], system: string, workload: string, round: number): ResultLine | undefined {
  return lines.filter(isResult).find((l) => l.round === round && l.system === system && l.workload === workload);
}

export function median(values: number[]): number {
  const sorted = values.filter((v) => !Number.isNaN(v)).sort((a, b) => a - b);
  if (sorted.length === 0) return Number.NaN;
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
}

export function markdownTable(header: string[], rows: string[][]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]): string => `| ${cells.map((c, i) => c.padEnd(widths[i] ?? 0)).join(' | ')} |`;
  return [line(header), `|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`, ...rows.map(line)].join('\n');
}
