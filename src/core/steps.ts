/**
 * Durable steps (ctx.step): the bounds a step obeys and the typed errors that
 * enforce them. Each error is a TaskFailure that is not retryable: the same
 * handler would break the same bound on every attempt.
 *
 * - name: 1 to MAX_STEP_NAME_LENGTH (200) UTF-16 units, no control characters,
 *   no lone surrogates, no leading or trailing white space (every store
 *   compares names exactly; MySQL's PAD SPACE comparison would not);
 * - result: JSON text of at most the worker's maxStepResultBytes (default
 *   1 MiB) as UTF-8; `undefined` is stored as no result;
 * - at most the worker's maxStepsPerTask (default 1,000) steps per task and
 *   attempt cycle.
 */
import { ErrorCode, TaskFailure } from './errors.js';
import { truncate } from './errors.js';

export const MAX_STEP_NAME_LENGTH = 200;
export const DEFAULT_MAX_STEP_RESULT_BYTES = 1024 * 1024;
export const DEFAULT_MAX_STEPS_PER_TASK = 1000;

export type StepErrorCode =
  | typeof ErrorCode.STEP_NAME_INVALID
  | typeof ErrorCode.STEP_RESULT_TOO_LARGE
  | typeof ErrorCode.STEP_RESULT_NOT_SERIALIZABLE
  | typeof ErrorCode.STEP_LIMIT_EXCEEDED;

/** A durable step broke one of its bounds: the task fails for good (retrying would break it again). */
export class StepError extends TaskFailure {
  declare readonly code: StepErrorCode;
  constructor(code: StepErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, { code, retryable: false, cause: options?.cause });
    this.name = 'StepError';
  }
}

const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

export function checkStepName(name: unknown): asserts name is string {
  const fail = (why: string): never => {
    throw new StepError(ErrorCode.STEP_NAME_INVALID, `ctx.step: the step name ${why}`);
  };
  if (typeof name !== 'string') fail('must be a string');
  const text = name as string;
  if (text.length === 0) fail('must not be empty');
  if (text.length > MAX_STEP_NAME_LENGTH) fail(`is ${text.length} characters, over the limit of ${MAX_STEP_NAME_LENGTH}`);
  if (CONTROL.test(text)) fail(`${JSON.stringify(truncate(text, 80))} holds a control character`);
  if (LONE_SURROGATE.test(text)) fail(`${JSON.stringify(truncate(text, 80))} holds a lone UTF-16 surrogate`);
  if (text.trim() !== text) fail(`${JSON.stringify(truncate(text, 80))} begins or ends with white space`);
}

/** A step's result as the JSON text to store (null: undefined, no result); bounded by `maxBytes` as UTF-8. */
export function stepResultJson(name: string, value: unknown, maxBytes: number): string | null {
  if (value === undefined) return null;
  let json: string | undefined;
  try {
    json = JSON.stringify(value);
  } catch (error) {
    throw new StepError(ErrorCode.STEP_RESULT_NOT_SERIALIZABLE, `ctx.step ${JSON.stringify(name)}: its result cannot be stored as JSON`, { cause: error });
  }
  if (json === undefined) {
    throw new StepError(ErrorCode.STEP_RESULT_NOT_SERIALIZABLE, `ctx.step ${JSON.stringify(name)}: its result (a ${typeof value}) cannot be stored as JSON`);
  }
  // A UTF-16 unit is at most 3 UTF-8 bytes: only a string that could be too long is measured.
  const bytes = json.length * 3 <= maxBytes ? json.length : Buffer.byteLength(json, 'utf8');
  if (bytes > maxBytes) {
    throw new StepError(
      ErrorCode.STEP_RESULT_TOO_LARGE,
      `ctx.step ${JSON.stringify(name)}: its result is ${bytes} bytes as JSON, over the limit of ${maxBytes} bytes (worker option maxStepResultBytes)`,
    );
  }
  return json;
}
