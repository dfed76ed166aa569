/**
 * Every error tasklease throws on purpose. Each has a stable `code` that
 * callers, logs and HTTP answers can rely on; `cause` is chained.
 */
export const ErrorCode = {
  VALIDATION: 'VALIDATION',
  UNKNOWN_TASK_TYPE: 'UNKNOWN_TASK_TYPE',
  PAYLOAD_INVALID: 'PAYLOAD_INVALID',
  PAYLOAD_TOO_LARGE: 'PAYLOAD_TOO_LARGE',
  INVALID_OPTIONS: 'INVALID_OPTIONS',
  NOT_FOUND: 'NOT_FOUND',
  INVALID_TRANSITION: 'INVALID_TRANSITION',
  CANCELLED: 'CANCELLED',
  TIMEOUT: 'TIMEOUT',
  DEADLINE_EXCEEDED: 'DEADLINE_EXCEEDED',
  LEASE_LOST: 'LEASE_LOST',
  LEASE_EXPIRED: 'LEASE_EXPIRED',
  SHUTDOWN: 'SHUTDOWN',
  HANDLER_ERROR: 'HANDLER_ERROR',
  /** A handler's result (or artifact) that cannot be stored as JSON: the task fails for good. */
  RESULT_NOT_SERIALIZABLE: 'RESULT_NOT_SERIALIZABLE',
  /** A batch handler (executeBatch) returned neither nothing nor one entry per task: every task of that call fails for good. */
  BATCH_RESULT_INVALID: 'BATCH_RESULT_INVALID',
  /** The database refused a finished attempt's outcome for a reason of its own row (a value it cannot store). */
  OUTCOME_NOT_WRITABLE: 'OUTCOME_NOT_WRITABLE',
  /** A component used in a state that does not allow it (a worker started twice). */
  INVALID_STATE: 'INVALID_STATE',
  /** The store cannot do this at all (ctx.complete(tx) on SQLite): see its `capabilities`. */
  UNSUPPORTED: 'UNSUPPORTED',
  STORE_UNAVAILABLE: 'STORE_UNAVAILABLE',
  SCHEMA_MISMATCH: 'SCHEMA_MISMATCH',
  DRIVER_MISSING: 'DRIVER_MISSING',
  /** HTTP: no credentials, or credentials that are unknown, expired or revoked. */
  UNAUTHENTICATED: 'UNAUTHENTICATED',
  /** HTTP: the caller's role may not do this. */
  FORBIDDEN: 'FORBIDDEN',
  /** HTTP: too many failed authentications (or open streams) from this client; retry later. */
  RATE_LIMITED: 'RATE_LIMITED',
  /** HTTP: the request body is over the server's limit. */
  REQUEST_TOO_LARGE: 'REQUEST_TOO_LARGE',
  /** A call on a store after close(). */
  STORE_CLOSED: 'STORE_CLOSED',
  /** The store's tables are missing: migrate() was never run on this database or schema. */
  SCHEMA_NOT_MIGRATED: 'SCHEMA_NOT_MIGRATED',
  /** The database server did not complete a connection within connectTimeoutMs. */
  STORE_CONNECT_TIMEOUT: 'STORE_CONNECT_TIMEOUT',
  /** The database (or a connection pooler in front of it) refuses how the store is configured; the message names the fix. */
  STORE_CONFIGURATION: 'STORE_CONFIGURATION',
  /** One of the store's statements ran longer than statementTimeoutMs and was cancelled by the server. */
  STORE_STATEMENT_TIMEOUT: 'STORE_STATEMENT_TIMEOUT',
  /** A schedule's cron expression that the parser rejects. */
  INVALID_CRON: 'INVALID_CRON',
  /** A schedule's time zone that is not an IANA zone this runtime knows. */
  INVALID_TIME_ZONE: 'INVALID_TIME_ZONE',
  /** A token created with an expiry that has already passed (it could never be used). */
  TOKEN_EXPIRY_PAST: 'TOKEN_EXPIRY_PAST',
  /** client.edit with `expect.updatedAt`: the task changed since that time (another edit, an action): nothing was written. */
  TASK_CHANGED: 'TASK_CHANGED',
  /** client.edit: the task's payload is encrypted and this client's middleware would store the new one in clear. */
  PAYLOAD_NOT_SEALED: 'PAYLOAD_NOT_SEALED',
  /** A status change would make a task hold a `unique` key that another task holds meanwhile. */
  UNIQUE_CONFLICT: 'UNIQUE_CONFLICT',
  /** client.waitFor: the task did not finish within timeoutMs. */
  WAIT_TIMEOUT: 'WAIT_TIMEOUT',
  /** client.waitFor: the caller's signal aborted the wait. */
  WAIT_ABORTED: 'WAIT_ABORTED',
  /** The server's address is taken (another program, or another tasklease, listens there). */
  PORT_IN_USE: 'PORT_IN_USE',
  /** `tasklease move`: the target holds tasks that no move put there (it is someone's queue already). */
  MOVE_TARGET_NOT_EMPTY: 'MOVE_TARGET_NOT_EMPTY',
  /** `tasklease move`: the source's schema is not the one this code reads (migrate it, or upgrade tasklease). */
  MOVE_SOURCE_SCHEMA: 'MOVE_SOURCE_SCHEMA',
  /** `tasklease move`: leases on the source were still held when the wait for them ended; re-run to resume. */
  MOVE_LEASES_HELD: 'MOVE_LEASES_HELD',
  /** `tasklease move`: source and target counts differ after the copy; re-run to copy again. */
  MOVE_VERIFY_MISMATCH: 'MOVE_VERIFY_MISMATCH',
  /** A flow node cancelled because a parent it depends on (with onParentFailure CANCEL) failed or was cancelled. */
  PARENT_FAILED: 'PARENT_FAILED',
  /** A flow whose dependencies form a cycle: refused at submit, nothing written. */
  FLOW_CYCLE: 'FLOW_CYCLE',
  /** ctx.step: a step name that is empty, longer than 200 characters, or holds control characters or a lone surrogate. */
  STEP_NAME_INVALID: 'STEP_NAME_INVALID',
  /** ctx.step: a step's result over the worker's maxStepResultBytes as JSON. */
  STEP_RESULT_TOO_LARGE: 'STEP_RESULT_TOO_LARGE',
  /** ctx.step: a step's result that JSON cannot hold (a cycle, a BigInt, a function). */
  STEP_RESULT_NOT_SERIALIZABLE: 'STEP_RESULT_NOT_SERIALIZABLE',
  /** ctx.step: more steps in one attempt cycle of a task than the worker's maxStepsPerTask. */
  STEP_LIMIT_EXCEEDED: 'STEP_LIMIT_EXCEEDED',
  /** A sandboxed handler's thread went over its memory limit (sandbox.maxOldGenerationSizeMb…) and was stopped: retried per the type's policy. */
  SANDBOX_OUT_OF_MEMORY: 'SANDBOX_OUT_OF_MEMORY',
  /** A sandboxed handler's thread ended without an answer (an uncaught error, process.exit in the thread): retried per the type's policy. */
  SANDBOX_CRASHED: 'SANDBOX_CRASHED',
  /** A sandboxed handler's module could not be loaded, or does not export the handler it names. */
  SANDBOX_MODULE_INVALID: 'SANDBOX_MODULE_INVALID',
  /** What a sandboxed handler cannot do (ctx.complete(tx)): fails the task for good. */
  SANDBOX_UNSUPPORTED: 'SANDBOX_UNSUPPORTED',
  /** A payload or step result that cannot cross to a sandboxed handler's thread by structured clone: fails the task for good. */
  SANDBOX_NOT_CLONEABLE: 'SANDBOX_NOT_CLONEABLE',
  /** An encrypted payload or result names a key this process does not hold (client/encryption.ts); not retried. */
  PAYLOAD_KEY_MISSING: 'PAYLOAD_KEY_MISSING',
  /** The key of an encrypted payload or result does not open it (another key under that id, or a changed envelope); not retried. */
  PAYLOAD_DECRYPT_FAILED: 'PAYLOAD_DECRYPT_FAILED',
  /** A middleware is not one (no name, no hook, a hook that is not a function: client/middleware.ts). */
  MIDDLEWARE_INVALID: 'MIDDLEWARE_INVALID',
  /** A middleware called next twice. */
  MIDDLEWARE_NEXT_TWICE: 'MIDDLEWARE_NEXT_TWICE',
  /** A submit middleware passed on another number of requests than it got. */
  MIDDLEWARE_CHANGED_REQUESTS: 'MIDDLEWARE_CHANGED_REQUESTS',
  /** A fence (ctx.fence) or fence header that is not a task id and a whole number ≥ 1 (core/fence.ts). */
  FENCE_INVALID: 'FENCE_INVALID',
  /** A write refused by a fence check: a newer attempt of the task (or holder of the resource) wrote already (core/fence.ts). */
  FENCE_STALE: 'FENCE_STALE',
  /** A payload search path that is not 1–8 dot-separated segments of A–Z a–z 0–9 _ - (core/search.ts). */
  SEARCH_PATH_INVALID: 'SEARCH_PATH_INVALID',
  /** A payload search value that is not a string, finite number or boolean (a prefix: a non-empty string), or too many filters. */
  SEARCH_VALUE_INVALID: 'SEARCH_VALUE_INVALID',
} as const;
export type ErrorCode = (typeof ErrorCode)[keyof typeof ErrorCode];

export class TaskLeaseError extends Error {
  readonly code: string;
  constructor(code: string, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
    this.code = code;
  }
}

/** Bad input at an API edge: nothing was written. `field` names the culprit. */
export class ValidationError extends TaskLeaseError {
  readonly field: string | undefined;
  constructor(message: string, field?: string, code: string = ErrorCode.VALIDATION, options?: { cause?: unknown }) {
    super(code, message, options);
    this.field = field;
  }
}

export class UnknownTaskTypeError extends ValidationError {
  readonly taskType: string;
  constructor(taskType: string) {
    super(`unknown task type ${JSON.stringify(truncate(taskType, 80))}: no task definition is registered for it`, 'type', ErrorCode.UNKNOWN_TASK_TYPE);
    this.taskType = taskType;
  }
}

export class PayloadInvalidError extends ValidationError {
  readonly issues: readonly { message: string; path?: string }[];
  constructor(taskType: string, issues: readonly { message: string; path?: string }[]) {
    const first = issues
      .slice(0, 3)
      .map((i) => (i.path ? `${i.path}: ${i.message}` : i.message))
      .join('; ');
    super(`payload for task type ${JSON.stringify(truncate(taskType, 80))} fails its schema: ${first}`, 'payload', ErrorCode.PAYLOAD_INVALID);
    this.issues = issues;
  }
}

/**
 * A payload over a limit: the client's maxPayloadBytes, or the database
 * server's own (`source` names it and the fix). Permanent: the same payload
 * is refused again on every try.
 */
export class PayloadTooLargeError extends ValidationError {
  constructor(bytes: number, limit: number, source = 'option maxPayloadBytes', options?: { cause?: unknown }) {
    super(`payload is ${bytes} bytes as JSON, over the limit of ${limit} bytes (${source})`, 'payload', ErrorCode.PAYLOAD_TOO_LARGE, options);
  }
}

/** A statement the database server refused for its size (MySQL max_allowed_packet): permanent, like a payload too large. */
export class StatementTooLargeError extends ValidationError {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, 'payload', ErrorCode.PAYLOAD_TOO_LARGE, options);
  }
}

/** Options of a component that cannot work; thrown at construction. */
export class InvalidOptionsError extends ValidationError {
  constructor(component: string, field: string, problem: string) {
    super(`${component} option "${field}" ${problem}`, field, ErrorCode.INVALID_OPTIONS);
  }
}

/** A schedule's cron expression the parser (croner) rejects; `expression` is what was given. */
export class InvalidCronError extends ValidationError {
  readonly expression: string;
  constructor(expression: string, problem: string, options?: { cause?: unknown }) {
    super(`cron expression ${JSON.stringify(truncate(expression, 120))} is invalid: ${problem}`, 'cron', ErrorCode.INVALID_CRON, options);
    this.expression = expression;
  }
}

export class InvalidTimeZoneError extends ValidationError {
  readonly timeZone: string;
  constructor(timeZone: string) {
    super(`time zone ${JSON.stringify(truncate(timeZone, 80))} is not an IANA time zone (e.g. UTC, Europe/Paris)`, 'timeZone', ErrorCode.INVALID_TIME_ZONE);
    this.timeZone = timeZone;
  }
}

/** tokens.create with an `expiresAt` that has already passed: such a token could never be used. */
export class TokenExpiryPastError extends ValidationError {
  readonly expiresAt: Date;
  constructor(expiresAt: Date) {
    super(`expiresAt ${expiresAt.toISOString()} has already passed: a token must expire in the future`, 'expiresAt', ErrorCode.TOKEN_EXPIRY_PAST);
    this.expiresAt = expiresAt;
  }
}

export class NotFoundError extends TaskLeaseError {
  constructor(what: string, id: string) {
    super(ErrorCode.NOT_FOUND, `${what} ${JSON.stringify(truncate(id, 80))} not found`);
  }
}

/** The caller is not who it must be (UNAUTHENTICATED), may not do this (FORBIDDEN), or must slow down (RATE_LIMITED). */
export class AccessError extends TaskLeaseError {
  constructor(code: 'UNAUTHENTICATED' | 'FORBIDDEN' | 'RATE_LIMITED', message: string) {
    super(code, message);
  }
}

export class InvalidTransitionError extends TaskLeaseError {
  constructor(taskId: string, from: string, action: string) {
    super(ErrorCode.INVALID_TRANSITION, `cannot ${action} task ${taskId}: it is ${from}`);
  }
}

/** An edit that expected the task as it was at `expectedUpdatedAt`, and found it changed since: nothing was written. */
export class TaskChangedError extends TaskLeaseError {
  constructor(taskId: string, expectedUpdatedAt: Date) {
    super(
      ErrorCode.TASK_CHANGED,
      `task ${taskId} changed after ${expectedUpdatedAt.toISOString()} (another edit or action): read it again, nothing was written`,
    );
  }
}

/** Thrown inside a handler by `ctx.checkCancellation()`, and the abort reason of its signal. */
export class TaskAbortedError extends TaskLeaseError {
  constructor(code: 'CANCELLED' | 'TIMEOUT' | 'DEADLINE_EXCEEDED' | 'LEASE_LOST' | 'SHUTDOWN', message: string) {
    super(code, message);
  }
}

/**
 * The database refused to put a task back into a status in which it holds its
 * `unique` key (an operator's retry, a replay, a resume), because another task
 * holds that key now. Nothing changed.
 */
export class UniqueConflictError extends TaskLeaseError {
  constructor(action: string, options?: { cause?: unknown }) {
    super(ErrorCode.UNIQUE_CONFLICT, `${action}: another task holds this task's unique key now; nothing changed`, options);
  }
}

/** client.waitFor gave up before the task finished; `lastStatus` is the status it last read (null: none yet). */
export class WaitError extends TaskLeaseError {
  readonly taskId: string;
  readonly lastStatus: string | null;
  constructor(taskId: string, code: 'WAIT_TIMEOUT' | 'WAIT_ABORTED', lastStatus: string | null) {
    const why = code === 'WAIT_TIMEOUT' ? 'timed out (option timeoutMs)' : 'was aborted (option signal)';
    super(code, `waiting for task ${taskId} to finish ${why}${lastStatus ? `; it is ${lastStatus}` : ''}`);
    this.taskId = taskId;
    this.lastStatus = lastStatus;
  }
}

/** A component used in a state that does not allow it (a worker started again after stop()). */
export class InvalidStateError extends TaskLeaseError {
  constructor(message: string) {
    super(ErrorCode.INVALID_STATE, message);
  }
}

/**
 * The store cannot do this (capabilities say so): no retry will help, so a
 * handler that lets it escape fails its task for good.
 */
export class UnsupportedError extends TaskLeaseError {
  readonly retryable = false;
  constructor(message: string) {
    super(ErrorCode.UNSUPPORTED, message);
  }
}

/** The server could not listen: its host and port are taken. `fix` says how to choose another port where it is chosen. */
export class PortInUseError extends TaskLeaseError {
  constructor(
    readonly host: string,
    readonly port: number,
    fix = 'choose another port (server option `port`)',
    options?: { cause?: unknown },
  ) {
    super(ErrorCode.PORT_IN_USE, `port ${port} on ${host} is already in use by another program; ${fix}`, options);
  }
}

/**
 * `tasklease move` stopped: `code` says why (MOVE_*), `phase` where. Nothing
 * was lost: the move's checkpoint is kept and a re-run resumes from it.
 */
export class MoveError extends TaskLeaseError {
  constructor(
    code: 'MOVE_TARGET_NOT_EMPTY' | 'MOVE_SOURCE_SCHEMA' | 'MOVE_LEASES_HELD' | 'MOVE_VERIFY_MISMATCH',
    message: string,
    readonly phase: string,
    readonly details: Record<string, unknown> = {},
  ) {
    super(code, message);
  }
}

/** The database could not serve a call. Code STORE_UNAVAILABLE unless a subclass names the reason. */
export class StoreError extends TaskLeaseError {
  constructor(message: string, options?: { cause?: unknown; code?: ErrorCode }) {
    super(options?.code ?? ErrorCode.STORE_UNAVAILABLE, message, options);
  }
}

export class StoreClosedError extends StoreError {
  constructor(storeName: string, method: string) {
    super(`${storeName} is closed: ${method}() was called after close()`, { code: ErrorCode.STORE_CLOSED });
  }
}

/** The tables are not there: say what to run, not which relation a driver missed. */
export class SchemaMissingError extends StoreError {
  constructor(where: string, options?: { cause?: unknown }) {
    super(`the tasklease schema is missing in ${where}: run \`await store.migrate()\` (or \`tasklease migrate\`) once before using the store`, {
      ...options,
      code: ErrorCode.SCHEMA_NOT_MIGRATED,
    });
  }
}

/**
 * A refusal that retrying cannot cure: a pooler that rejects a startup
 * parameter, prepared statements lost through transaction pooling.
 * `setting` names what to change.
 */
export class StoreConfigurationError extends StoreError {
  readonly setting: string;
  constructor(setting: string, message: string, options?: { cause?: unknown }) {
    super(message, { ...options, code: ErrorCode.STORE_CONFIGURATION });
    this.setting = setting;
  }
}

/** `host` is the server as host:port (never with a password). */
export class StoreConnectTimeoutError extends StoreError {
  readonly host: string;
  constructor(host: string, timeoutMs: number, options?: { cause?: unknown }) {
    super(`could not connect to ${host} within ${timeoutMs} ms (option connectTimeoutMs): is the server up and answering?`, {
      ...options,
      code: ErrorCode.STORE_CONNECT_TIMEOUT,
    });
    this.host = host;
  }
}

/**
 * A store's database driver is an optional peer dependency: a PostgreSQL-only
 * application should not have to compile better-sqlite3. Thrown when the store
 * is loaded without its driver installed, naming the package to install.
 */
export class DriverMissingError extends TaskLeaseError {
  readonly packageName: string;
  constructor(packageName: string, store: string, options?: { cause?: unknown }) {
    super(ErrorCode.DRIVER_MISSING, `${store} needs the ${packageName} package, which is not installed: npm install ${packageName}`, options);
    this.packageName = packageName;
  }
}

/**
 * Throw from a handler to control retrying: `retryable: false` fails the task
 * at once. The message is stored sanitized; `code` becomes the error code.
 */
export class TaskFailure extends Error {
  readonly code: string;
  readonly retryable: boolean;
  constructor(message: string, options: { code?: string; retryable?: boolean; cause?: unknown } = {}) {
    super(message, { cause: options.cause });
    this.name = 'TaskFailure';
    this.code = options.code ?? ErrorCode.HANDLER_ERROR;
    this.retryable = options.retryable ?? true;
  }
}

/**
 * A sandboxed handler's thread failed (worker/sandbox/): out of memory, crashed, its module unusable, a context
 * call it cannot make, or data that cannot cross. A TaskFailure, so that its code and retryability become the
 * failure record as they are.
 */
export class SandboxError extends TaskFailure {
  constructor(
    code: 'SANDBOX_OUT_OF_MEMORY' | 'SANDBOX_CRASHED' | 'SANDBOX_MODULE_INVALID' | 'SANDBOX_UNSUPPORTED' | 'SANDBOX_NOT_CLONEABLE',
    message: string,
    options: { retryable: boolean; cause?: unknown },
  ) {
    super(message, { code, ...options });
    this.name = 'SandboxError';
  }
}

export function truncate(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max)}…`;
}

/**
 * A fencing token refused at the receiving end (core/fence.ts): FENCE_INVALID for one that cannot be read,
 * FENCE_STALE for one not newer than the last accepted (`lastFence`) — an attempt that lost its lease.
 */
export class FenceError extends TaskLeaseError {
  constructor(
    code: 'FENCE_INVALID' | 'FENCE_STALE',
    message: string,
    readonly lastFence: number | null = null,
  ) {
    super(code, message);
  }
}
