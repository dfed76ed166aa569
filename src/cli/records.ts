/**
 * The payloads of a bulk submit, streamed from a file: JSON lines (one
 * payload per line; blank lines skipped) or CSV (a header row names the
 * fields; each row becomes an object of strings; RFC 4180 quoting, quoted
 * fields may span lines). Each record says its line, for error messages, and
 * how far into the file it ends, for the progress bar.
 */
import { createReadStream } from 'node:fs';
import { createInterface } from 'node:readline';
import { UsageError } from './exit-codes.js';

export type RecordFormat = 'jsonl' | 'csv';

export interface PayloadRecord {
  line: number;
  payload: unknown;
  /** Bytes of the file read up to the end of this record. */
  bytesRead: number;
}

export function formatOfPath(path: string): RecordFormat | null {
  if (/\.(jsonl|ndjson)$/i.test(path)) return 'jsonl';
  if (/\.csv$/i.test(path)) return 'csv';
  return null;
}

export async function* readRecords(path: string, format: RecordFormat): AsyncGenerator<PayloadRecord> {
  const lines = createInterface({ input: createReadStream(path, 'utf8'), crlfDelay: Infinity });
  let lineNumber = 0;
  let bytesRead = 0;
  const csv = format === 'csv' ? new CsvRows() : null;
  let header: string[] | null = null;
  for await (const raw of lines) {
    lineNumber += 1;
    bytesRead += Buffer.byteLength(raw, 'utf8') + 1;
    const text = lineNumber === 1 ? raw.replace(/^\uFEFF/, '') : raw;
    if (!csv) {
      if (text.trim().length > 0) yield { line: lineNumber, payload: parseJsonLine(text, path, lineNumber), bytesRead };
      continue;
    }
    const fields = csv.feed(text, lineNumber);
    if (fields === null || (fields.length === 1 && fields[0] === '')) continue;
    if (header === null) {
      header = checkHeader(fields, path);
      continue;
    }
    yield { line: csv.startLine, payload: rowObject(header, fields, path, csv.startLine), bytesRead };
  }
  if (csv?.open) throw new UsageError(`${path}:${csv.startLine}: a quoted field is never closed`, 'file');
}

function parseJsonLine(text: string, path: string, line: number): unknown {
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new UsageError(`${path}:${line}: not valid JSON (${(error as Error).message})`, 'file');
  }
}

function checkHeader(fields: string[], path: string): string[] {
  const names = fields.map((f) => f.trim());
  const duplicate = names.find((name, i) => name === '' || names.indexOf(name) !== i);
  if (duplicate !== undefined)
    throw new UsageError(`${path}:1: the CSV header has ${duplicate === '' ? 'an empty' : `a duplicate (${duplicate})`} column name`, 'file');
  return names;
}

function rowObject(header: string[], fields: string[], path: string, line: number): Record<string, string> {
  if (fields.length !== header.length) throw new UsageError(`${path}:${line}: ${fields.length} fields, but the header has ${header.length}`, 'file');
  return Object.fromEntries(header.map((name, i) => [name, fields[i]!]));
}

/** Joins lines until a record's quotes close; then splits it into fields. */
class CsvRows {
  private pending: string | null = null;
  startLine = 0;

  get open(): boolean {
    return this.pending !== null;
  }

  feed(line: string, lineNumber: number): string[] | null {
    if (this.pending === null) this.startLine = lineNumber;
    const text = this.pending === null ? line : `${this.pending}\n${line}`;
    const fields = splitRecord(text);
    this.pending = fields === null ? text : null;
    return fields;
  }
}

/** RFC 4180 fields of one record, or null while a quoted field is still open. */
export function splitRecord(text: string): string[] | null {
  const fields: string[] = [];
  let field = '';
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const char = text[i]!;
    if (quoted) {
      if (char !== '"') field += char;
      else if (text[i + 1] === '"') field += text[++i];
      else quoted = false;
    } else if (char === '"' && field.length === 0) quoted = true;
    else if (char === ',') {
      fields.push(field);
      field = '';
    } else field += char;
  }
  if (quoted) return null;
  fields.push(field);
  return fields;
}
