/** What a single and a bulk submit share: their flags, the definitions that check payloads, and the per-task options. */
import type { TaskLeaseClient } from '../client/client.js';
import type { SubmitOptions } from '../client/submit.js';
import { defineTask, type AnyTaskDefinition } from '../core/definition.js';
import type { CommandContext } from './context.js';
import { UsageError } from './exit-codes.js';
import type { RecordFormat } from './records.js';
import { loadWorkerModules } from './task-modules.js';

export interface SubmitFlags {
  priority?: number;
  delay?: number;
  at?: Date;
  deadline?: Date;
  maxAttempts?: number;
  owner?: string;
  idempotencyKey?: string;
  traceId?: string;
  rateKey?: string;
  tasks?: string[];
  file?: string;
  type?: string;
  format?: RecordFormat;
  batchSize: number;
  idempotencyKeyField?: string;
  uniqueKey?: string;
  uniquePeriod?: number;
  debounce?: number;
  sequenceKey?: string;
  sequenceOnDeadLetter?: 'BLOCK' | 'SKIP';
}

/** The application's definitions (--tasks), else a schema-less one for the type being submitted. */
/** A client for a submit: the definitions (and middleware) of the --tasks modules, else a bare definition of `type`. */
export function submitClient(ctx: CommandContext, flags: SubmitFlags, type: string): Promise<TaskLeaseClient> {
  return moduleClient(ctx, flags.tasks, [defineTask({ type })]);
}

/** A client with the definitions and middleware of task modules (--tasks), else with the `bare` definitions. */
export async function moduleClient(ctx: CommandContext, modules: readonly string[] | undefined, bare: AnyTaskDefinition[]): Promise<TaskLeaseClient> {
  if (!modules || modules.length === 0) return ctx.client(bare);
  const { tasks, middleware } = await loadWorkerModules(modules, ctx.io.cwd);
  return ctx.client(tasks, middleware);
}

/** The options every task of this submit shares. */
export function submitOptions(ctx: CommandContext, flags: SubmitFlags): SubmitOptions {
  if (flags.delay !== undefined && flags.at !== undefined) throw new UsageError('give --delay or --at, not both', 'delay');
  const owner = flags.owner ?? ctx.config().owner;
  const options: SubmitOptions = {
    priority: flags.priority,
    delayMs: flags.delay,
    availableAt: flags.at,
    deadlineAt: flags.deadline,
    maxAttempts: flags.maxAttempts,
    owner,
    idempotencyKey: flags.idempotencyKey,
    traceId: flags.traceId,
    rateKey: flags.rateKey,
    unique: uniqueOption(flags),
    sequenceKey: flags.sequenceKey,
    sequenceOnDeadLetter: flags.sequenceOnDeadLetter,
  };
  for (const key of Object.keys(options) as (keyof SubmitOptions)[]) if (options[key] === undefined) delete options[key];
  return options;
}

/** --unique-key, --unique-period and --debounce make one `unique` option (client/unique.ts checks it). */
function uniqueOption(flags: SubmitFlags): SubmitOptions['unique'] {
  if (flags.uniqueKey === undefined && flags.uniquePeriod === undefined && flags.debounce === undefined) return undefined;
  return {
    ...(flags.uniqueKey !== undefined ? { key: flags.uniqueKey } : {}),
    ...(flags.uniquePeriod !== undefined ? { periodMs: flags.uniquePeriod } : {}),
    ...(flags.debounce !== undefined ? { debounceMs: flags.debounce } : {}),
  };
}
