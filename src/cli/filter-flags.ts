/**
 * The task filter's flags, one definition for every command that takes them
 * (`list`, `bulk`): type, statuses, owner, keys, payload fields, error code,
 * creation window and ids, read into the client's TaskFilter.
 */
import type { Command } from 'commander';
import { parseFilterText } from '../core/search.js';
import type { TaskStatus } from '../core/status.js';
import type { TaskFilter } from '../client/task-filter.js';
import { isoTime, nonEmpty } from './parse.js';

function collect(value: string, previous: string[]): string[] {
  return [...previous, value];
}

export interface FilterFlags {
  type?: string;
  status?: string[];
  owner?: string;
  idempotencyKey?: string;
  keyPrefix?: string;
  payload: string[];
  payloadPrefix: string[];
  errorCode?: string;
  createdAfter?: Date;
  createdBefore?: Date;
  id: string[];
}

export function addFilterOptions(command: Command): Command {
  return command
    .option('-t, --type <type>', 'only this task type', nonEmpty)
    .option(
      '-s, --status <status...>',
      'only these statuses (QUEUED RUNNING RETRY_WAIT PAUSED CANCEL_REQUESTED CANCELLED SUCCESS PARTIAL_SUCCESS FAILED BLOCKED)',
    )
    .option('--owner <owner>', 'only tasks of this owner', nonEmpty)
    .option('--idempotency-key <key>', 'only tasks with exactly this idempotency key', nonEmpty)
    .option('--key-prefix <prefix>', 'only tasks whose idempotency key starts with this text (case-sensitive)', nonEmpty)
    .option('--payload <path=value>', 'only tasks whose payload field equals the value, e.g. order.id=42 (repeatable; "42" quoted is the string)', collect, [])
    .option('--payload-prefix <path=prefix>', 'only tasks whose string payload field starts with the text, e.g. customer.name=Ada (repeatable)', collect, [])
    .option('--error-code <code>', 'only tasks whose last failure had this error code', nonEmpty)
    .option('--created-after <time>', 'only tasks created at or after this ISO 8601 time', isoTime)
    .option('--created-before <time>', 'only tasks created before this ISO 8601 time', isoTime)
    .option('--id <id>', 'only this task (repeatable, at most 1000)', collect, []);
}

export function filterOf(flags: FilterFlags): TaskFilter {
  const statuses = flags.status?.flatMap((s) => s.split(',')).map((s) => s.trim().toUpperCase()) as TaskStatus[] | undefined;
  const payload = [...flags.payload.map((text) => parseFilterText(text, 'equals')), ...flags.payloadPrefix.map((text) => parseFilterText(text, 'prefix'))];
  return {
    ...(flags.type ? { taskType: flags.type } : {}),
    ...(statuses ? { status: statuses } : {}),
    ...(flags.owner ? { owner: flags.owner } : {}),
    ...(flags.idempotencyKey ? { idempotencyKey: flags.idempotencyKey } : {}),
    ...(flags.keyPrefix ? { idempotencyKeyPrefix: flags.keyPrefix } : {}),
    ...(payload.length > 0 ? { payload } : {}),
    ...(flags.errorCode ? { errorCode: flags.errorCode } : {}),
    ...(flags.createdAfter ? { createdAfter: flags.createdAfter } : {}),
    ...(flags.createdBefore ? { createdBefore: flags.createdBefore } : {}),
    ...(flags.id.length > 0 ? { ids: flags.id } : {}),
  };
}
