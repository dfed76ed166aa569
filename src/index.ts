/** `tasklease`: tasks, client, worker, observability and openStore(url). */
export * from './core/errors.js';
export { TaskStatus, TRANSITIONS, canTransition, isTerminal, ALL_STATUSES, TERMINAL_STATUSES } from './core/status.js';
export { Scope } from './core/scope.js';
export type { Task, TaskProgress, NewTask, Lease, FailureRecord } from './core/task.js';
export { retryDelayMs, DEFAULT_RETRY, type RetryOptions } from './core/retry.js';
export type { StandardSchemaV1 } from './core/standard-schema.js';
export { uuidv7 } from './core/ids.js';
export { SearchPathError, SearchValueError, SEARCH_LIMITS, type PayloadFilter, type PayloadCondition } from './core/search.js';
export type * from './store/types.js';
// The stores live in their own entry points (tasklease/sqlite, tasklease/postgres,
// tasklease/mysql): this one imports no database driver, nor any driver's types.
export { openStore, dialectOfUrl, type OpenStoreOptions } from './store/open.js';
export { defineTask, TaskResult, type TaskDefinition, type TaskSnooze } from './core/definition.js';
export type { TaskContext } from './core/context.js';
export {
  FENCE_HEADER,
  FenceGate,
  checkFence,
  fenceHeader,
  parseFenceHeader,
  writeFencedObject,
  type ConditionalObjectStore,
  type Fence,
} from './core/fence.js';
export type { SandboxOptions } from './core/sandbox.js';
export {
  MAX_BATCH_SIZE,
  MAX_BATCH_WAIT_MS,
  type BatchContext,
  type BatchHandler,
  type BatchItem,
  type BatchItemResult,
  type BatchOptions,
} from './core/batch.js';
export { StepError, MAX_STEP_NAME_LENGTH, DEFAULT_MAX_STEP_RESULT_BYTES, DEFAULT_MAX_STEPS_PER_TASK } from './core/steps.js';
export type { TaskStep, StepSummary } from './client/steps.js';
export {
  DEFAULT_MAX_LOG_LINES_PER_ATTEMPT,
  DEFAULT_MAX_LOG_LINES_PER_TASK,
  DEFAULT_MAX_LOG_MESSAGE_BYTES,
  DEFAULT_MAX_LOG_FIELDS_BYTES,
  DEFAULT_REDACT_KEYS,
  type TaskLogger,
  type TaskLogLevel,
} from './core/logs.js';
export type { TaskLogEntry, LogReadOptions } from './client/logs.js';
export type { WorkerEvents } from './worker/events.js';
export { Worker, createWorker, type WorkerStats, type WorkerState } from './worker/worker.js';
export type { WorkerOptions } from './worker/options.js';
export {
  TaskLeaseClient,
  createClient,
  type ClientEvents,
  type ClientOptions,
  type ListOptions,
  type CancelOutcome,
  type ActionOptions,
  type EditOptions,
  type ScopeOption,
} from './client/client.js';
export type { SubmitOptions, SubmitRequest } from './client/submit.js';
export { EDITABLE_STATUSES, type TaskChanges } from './client/edit.js';
export {
  BULK_ACTIONS,
  type BulkAction,
  type BulkDryRun,
  type BulkOperation,
  type BulkRequest,
  type BulkRunOptions,
  type BulkStartOptions,
} from './client/bulk.js';
export type { TaskFilter } from './client/task-filter.js';
export type { BulkStatus } from './store/bulk.js';
export {
  MiddlewareError,
  type Middleware,
  type SubmitCall,
  type SubmitNext,
  type SubmitVia,
  type ExecuteCall,
  type ExecuteNext,
  type HandlerReturn,
  type StoredValue,
} from './client/middleware.js';
export {
  payloadEncryption,
  isEncrypted,
  parseKeys,
  PayloadKeyError,
  ENCRYPTION_ALGORITHM,
  type EncryptedValue,
  type PayloadEncryptionOptions,
} from './client/encryption.js';
export type { PublishOptions, PublishResult, SubscribeInput, Subscription } from './client/events.js';
export type { ScheduleApi, ScheduleView } from './client/schedules.js';
export { MAX_CATCH_UP, type Schedule, type ScheduleInput } from './core/schedule.js';
export type { UniqueOptions } from './client/unique.js';
export type { WaitOptions } from './client/wait.js';
export { moveStore, MOVE_PHASES, type MoveOptions, type MovePhase, type MoveProgress, type MoveReport } from './client/move.js';
export * from './observe/index.js';
