/**
 * Where the import example's claims land, and its report. The sink stands for
 * the business database: writeBatch stores the batch's rows and their
 * idempotent marks together (in a real database: one short transaction per
 * batch, never one around the whole import), skipping keys it holds already.
 */
import { appendFile, mkdir, readFile, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { ClaimRecord } from './medical-csv.js';

export interface ClaimSink {
  /** Stores the rows whose key is new; returns how many it stored. */
  writeBatch(rows: { key: string; record: ClaimRecord }[]): Promise<number>;
}

export interface Rejected {
  line: number;
  reason: string;
}

/** Claims as JSON lines, one per key; the keys already present are read once, on first use. */
export class JsonLinesSink implements ClaimSink {
  private keys: Promise<Set<string>> | null = null;
  private tail: Promise<unknown> = Promise.resolve();

  constructor(readonly path: string) {}

  async writeBatch(rows: { key: string; record: ClaimRecord }[]): Promise<number> {
    return (await this.writeNew(rows)).size;
  }

  /** The same write, answering the keys it stored (the flow example's parts count their own imports by them). */
  writeNew(rows: { key: string; record: ClaimRecord }[]): Promise<Set<string>> {
    // One batch at a time, so two tasks in this process never both take the same new key.
    const next = this.tail.then(() => this.write(rows));
    this.tail = next.catch(() => undefined);
    return next;
  }

  private async write(rows: { key: string; record: ClaimRecord }[]): Promise<Set<string>> {
    const keys = await (this.keys ??= this.load());
    const fresh = new Map<string, ClaimRecord>();
    for (const row of rows) if (!keys.has(row.key) && !fresh.has(row.key)) fresh.set(row.key, row.record);
    if (fresh.size === 0) return new Set();
    await mkdir(dirname(this.path), { recursive: true });
    await appendFile(this.path, [...fresh].map(([key, record]) => `${JSON.stringify({ key, ...record })}\n`).join(''));
    // Marked only once written: a failed append leaves the rows to the retry.
    for (const key of fresh.keys()) keys.add(key);
    return new Set(fresh.keys());
  }

  private async load(): Promise<Set<string>> {
    const text = await readFile(this.path, 'utf8').catch((error: NodeJS.ErrnoException) => {
      if (error.code === 'ENOENT') return '';
      throw error;
    });
    return new Set(
      text
        .split('\n')
        .filter(Boolean)
        .map((line) => (JSON.parse(line) as { key: string }).key),
    );
  }
}

/** The rejected rows as CSV (line, reason): no patient data, only where to look. Returns its path. */
export async function writeReport(dir: string, taskId: string, source: string, rejected: Rejected[]): Promise<string> {
  await mkdir(dir, { recursive: true });
  const path = join(dir, `import-medical-${taskId}.csv`);
  const lines = ['line,reason', ...rejected.map((r) => `${r.line},"${r.reason.replaceAll('"', '""')}"`)];
  await writeFile(path, `# source: ${source}\n${lines.join('\n')}\n`);
  return path;
}
