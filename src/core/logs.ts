/**
 * Per-task logs (ctx.log): what a line is, its bounds and its redaction —
 * decided once, for the worker that buffers the lines, the stores that keep
 * them and the process log that also gets them.
 *
 * - A message is text of at most the worker's maxLogMessageBytes as UTF-8
 *   (default 4 KiB); a longer one is cut and ends with "…[truncated]".
 * - Fields are a plain object turned into JSON of at most maxLogFieldsBytes
 *   (default 8 KiB); larger fields are replaced by { truncated: true, bytes }.
 *   Values that JSON cannot carry become text ("[unserializable]").
 * - Redaction (脱敏), the rule the process log (observe/logging.ts) keeps:
 *   payloads and raw error messages stay out of logs. A field named like a
 *   secret or personal data (password, token, secret, authorization, cookie,
 *   apiKey, …, plus the worker's logRedactKeys) or named `payload` is
 *   replaced by "[REDACTED]" at any depth; an Error value keeps its name only
 *   (its message may quote data) unless exposeErrorMessages is on.
 * - Bounds per attempt (maxLogLinesPerAttempt, default 200) and per task
 *   (maxLogLinesPerTask, default 1,000): over them the oldest lines are
 *   dropped and a marker line says how many (store/rules/logs.ts).
 */

export const TASK_LOG_LEVELS = ['info', 'warn', 'error'] as const;
export type TaskLogLevel = (typeof TASK_LOG_LEVELS)[number];

export const DEFAULT_MAX_LOG_LINES_PER_ATTEMPT = 200;
export const DEFAULT_MAX_LOG_LINES_PER_TASK = 1000;
export const DEFAULT_MAX_LOG_MESSAGE_BYTES = 4096;
export const DEFAULT_MAX_LOG_FIELDS_BYTES = 8192;
export const REDACTED = '[REDACTED]';

/** Key names redacted by default (compared without case, '-' and '_'). */
export const DEFAULT_REDACT_KEYS: readonly string[] = [
  'password',
  'passwd',
  'pwd',
  'secret',
  'token',
  'accesstoken',
  'refreshtoken',
  'apikey',
  'authorization',
  'auth',
  'cookie',
  'setcookie',
  'credential',
  'credentials',
  'privatekey',
  'clientsecret',
  'ssn',
  'cardnumber',
  'cvv',
  'payload',
];

/** What ctx.log offers a handler. */
export interface TaskLogger {
  info(message: string, fields?: Record<string, unknown>): void;
  warn(message: string, fields?: Record<string, unknown>): void;
  error(message: string, fields?: Record<string, unknown>): void;
}

/** One line as the worker buffers it and a store writes it (already bounded and redacted). */
export interface TaskLogLine {
  level: TaskLogLevel;
  message: string;
  /** JSON text of the redacted fields; null when none were given. */
  fieldsJson: string | null;
  /** Wall clock of the ctx.log call. */
  loggedAt: Date;
}

export interface LogRedaction {
  /** Normalized key names (lower case, no '-' or '_'). */
  keys: ReadonlySet<string>;
  exposeErrorMessages: boolean;
}

export function normalizeKey(key: string): string {
  return key.toLowerCase().replace(/[-_\s]/g, '');
}

export function logRedaction(extraKeys: readonly string[] = [], exposeErrorMessages = false): LogRedaction {
  return { keys: new Set([...DEFAULT_REDACT_KEYS, ...extraKeys].map(normalizeKey)), exposeErrorMessages };
}

const MAX_DEPTH = 8;

/** The fields with the redaction rule applied (a copy; the caller's object is not changed). */
export function redactFields(fields: Record<string, unknown>, redaction: LogRedaction): Record<string, unknown> {
  return redactValue(fields, redaction, 0, new Set()) as Record<string, unknown>;
}

function redactValue(value: unknown, redaction: LogRedaction, depth: number, seen: Set<object>): unknown {
  if (value instanceof Error) return redaction.exposeErrorMessages ? { name: value.name, message: value.message } : { name: value.name };
  if (typeof value === 'bigint') return value.toString();
  if (typeof value === 'function' || typeof value === 'symbol') return '[unserializable]';
  if (value === null || typeof value !== 'object') return value;
  if (value instanceof Date) return Number.isNaN(value.getTime()) ? null : value.toISOString();
  if (seen.has(value)) return '[circular]';
  if (depth >= MAX_DEPTH) return '[nested too deep]';
  seen.add(value);
  try {
    if (Array.isArray(value)) return value.map((item) => redactValue(item, redaction, depth + 1, seen));
    const out: Record<string, unknown> = {};
    for (const [key, item] of Object.entries(value)) {
      out[key] = redaction.keys.has(normalizeKey(key)) ? REDACTED : redactValue(item, redaction, depth + 1, seen);
    }
    return out;
  } finally {
    seen.delete(value);
  }
}

export interface LogLineBounds {
  maxMessageBytes: number;
  maxFieldsBytes: number;
}

const TRUNCATED = '…[truncated]';
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;

/** Text of at most `maxBytes` UTF-8 bytes, without NUL or lone surrogates (every store keeps it alike). */
export function boundedText(text: string, maxBytes: number): string {
  let clean = text.includes('\u0000') ? text.replace(/\u0000/g, '\uFFFD') : text;
  clean = clean.replace(LONE_SURROGATE, '\uFFFD');
  if (Buffer.byteLength(clean, 'utf8') <= maxBytes) return clean;
  const room = Math.max(0, maxBytes - Buffer.byteLength(TRUNCATED, 'utf8'));
  const cut = Buffer.from(clean, 'utf8')
    .subarray(0, room)
    .toString('utf8')
    .replace(/\uFFFD$/, '');
  return cut + TRUNCATED;
}

/** A ctx.log call as a line to keep: message bounded, fields redacted and bounded. */
export function makeLogLine(
  level: TaskLogLevel,
  message: unknown,
  fields: unknown,
  redaction: LogRedaction,
  bounds: LogLineBounds,
  loggedAt: Date,
): { line: TaskLogLine; fields: Record<string, unknown> | undefined } {
  const text = boundedText(typeof message === 'string' ? message : String(message), bounds.maxMessageBytes);
  if (fields === undefined || fields === null) return { line: { level, message: text, fieldsJson: null, loggedAt }, fields: undefined };
  const redacted =
    typeof fields === 'object' && !Array.isArray(fields)
      ? redactFields(fields as Record<string, unknown>, redaction)
      : { value: redactValue(fields, redaction, 0, new Set()) };
  let json: string;
  try {
    json = JSON.stringify(redacted) ?? 'null';
  } catch {
    json = JSON.stringify({ unserializable: true });
  }
  json = boundedText(json, Number.MAX_SAFE_INTEGER);
  const bytes = Buffer.byteLength(json, 'utf8');
  if (bytes > bounds.maxFieldsBytes) {
    const small = { truncated: true, bytes };
    return { line: { level, message: text, fieldsJson: JSON.stringify(small), loggedAt }, fields: small };
  }
  return { line: { level, message: text, fieldsJson: json, loggedAt }, fields: redacted };
}

/** One execution's lines not yet written (worker/logs.ts keeps it on the execution). */
export interface LogBuffer {
  pending: TaskLogLine[];
  /** Lines dropped from the buffer (over maxLogLinesPerAttempt) since the last batch. */
  dropped: number;
  /** The batch in flight (batches of one execution are written in turn). */
  writing: Promise<void> | null;
  lastWriteAt: number;
}
