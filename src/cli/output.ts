/**
 * What a command prints: one JSON document on stdout under --json, else
 * tables and key–value blocks for people. Colours only when stdout is a TTY
 * and NO_COLOR is unset (https://no-color.org).
 */
import type { CliIo } from './io.js';

const CODES = { red: 31, green: 32, yellow: 33, blue: 34, magenta: 35, cyan: 36, gray: 90, bold: 1 } as const;
export type Colour = keyof typeof CODES;

const STATUS_COLOURS: Record<string, Colour> = {
  SUCCESS: 'green',
  PARTIAL_SUCCESS: 'yellow',
  FAILED: 'red',
  CANCELLED: 'gray',
  CANCEL_REQUESTED: 'magenta',
  RUNNING: 'cyan',
  QUEUED: 'blue',
  RETRY_WAIT: 'yellow',
  PAUSED: 'magenta',
  UP: 'green',
  DEGRADED: 'yellow',
  DOWN: 'red',
  ACTIVE: 'green',
  EXPIRED: 'red',
  NO_LEASE: 'gray',
};

export interface Column<Row> {
  header: string;
  value: (row: Row) => unknown;
  /** Colour a cell by its text (statuses). */
  colourByValue?: boolean;
}

export class Output {
  readonly json: boolean;
  private readonly colours: boolean;

  constructor(
    private readonly io: CliIo,
    options: { json: boolean },
  ) {
    this.json = options.json;
    this.colours = io.stdout.isTTY === true && !io.env.NO_COLOR && io.env.TERM !== 'dumb';
  }

  /** The command's answer: `data` as JSON, or what `human` renders. */
  result(data: unknown, human: () => string): void {
    this.io.stdout.write(this.json ? `${JSON.stringify(data, null, 2)}\n` : ensureNewline(human()));
  }

  /** A note for people (stderr): never mixed into the JSON document. */
  note(text: string): void {
    this.io.stderr.write(ensureNewline(text));
  }

  paint(text: string, colour: Colour): string {
    return this.colours ? `\u001b[${CODES[colour]}m${text}\u001b[0m` : text;
  }

  status(text: string): string {
    const colour = STATUS_COLOURS[text];
    return colour ? this.paint(text, colour) : text;
  }

  heading(text: string): string {
    return this.paint(`=== ${text} ===`, 'bold');
  }

  table<Row>(rows: readonly Row[], columns: readonly Column<Row>[], empty = '(none)'): string {
    if (rows.length === 0) return this.paint(empty, 'gray');
    const cells = rows.map((row) => columns.map((column) => formatValue(column.value(row))));
    const widths = columns.map((column, i) => Math.max(column.header.length, ...cells.map((line) => line[i]!.length)));
    const pad = (text: string, i: number): string => text.padEnd(widths[i]!);
    const header = this.paint(
      columns
        .map((column, i) => pad(column.header, i))
        .join('  ')
        .trimEnd(),
      'bold',
    );
    const lines = cells.map((line) =>
      line
        .map((text, i) => (columns[i]!.colourByValue ? this.status(text) + ' '.repeat(widths[i]! - text.length) : pad(text, i)))
        .join('  ')
        .trimEnd(),
    );
    return [header, ...lines].join('\n');
  }

  /** `key: value` lines, keys aligned. */
  fields(entries: readonly [string, unknown][]): string {
    const width = Math.max(...entries.map(([key]) => key.length));
    return entries.map(([key, value]) => `${key.padEnd(width)}  ${STATUS_COLOURS[String(value)] ? this.status(String(value)) : formatValue(value)}`).join('\n');
  }
}

export function formatValue(value: unknown): string {
  if (value === null || value === undefined) return '-';
  if (value instanceof Date) return value.toISOString();
  if (typeof value === 'object') return JSON.stringify(value);
  return String(value);
}

/** 1234 ms → "1.23 s"; sub-second stays in ms. */
export function formatMs(ms: number | null | undefined): string {
  if (ms === null || ms === undefined) return '-';
  if (Math.abs(ms) < 1000) return `${Math.round(ms)} ms`;
  if (Math.abs(ms) < 120_000) return `${(ms / 1000).toFixed(2)} s`;
  return `${(ms / 60_000).toFixed(1)} min`;
}

function ensureNewline(text: string): string {
  return text.endsWith('\n') ? text : `${text}\n`;
}
