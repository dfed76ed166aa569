/**
 * diagnose(taskId): seed article 2's diagnose-task.sh as an API — the task,
 * its attempts, its last failures, its lease status, its durable steps, and a plain-language
 * verdict for the causes in the seed's troubleshooting guide.
 */
import { rateStates, type RateState } from './rates.js';
import { ErrorCode, NotFoundError } from '../core/errors.js';
import { Scope } from '../core/scope.js';
import { isQuarantined, type Task } from '../core/task.js';
import type { AttemptRecord, FailureRow, Store } from '../store/types.js';
import { GLOBAL_POLICY_KEY, ownerPolicyKey, typePolicyKey } from './policies.js';
import { stepSummary, type StepSummary } from './steps.js';

export type LeaseStatus = 'NO_LEASE' | 'EXPIRED' | 'ACTIVE';

export type CauseCode =
  | 'NO_WORKER'
  | 'GLOBAL_LIMIT_FULL'
  | 'TYPE_LIMIT_FULL'
  | 'OWNER_LIMIT_FULL'
  | 'RATE_LIMITED'
  | 'NOT_YET_AVAILABLE'
  | 'PAST_DEADLINE'
  | 'PAUSED'
  | 'WAITING_FOR_PARENTS'
  | 'WAITING_IN_SEQUENCE'
  | 'SEQUENCE_BLOCKED'
  | 'WAITING_FOR_CHILDREN'
  | 'CANCELLED_BY_PARENT'
  | 'POLICY_DISABLED'
  | 'LEASE_EXPIRING_REPEATEDLY'
  | 'LEASE_EXPIRED'
  | 'WAITING_FOR_RETRY'
  | 'CANCEL_REQUESTED'
  | 'RUNNING'
  | 'READY'
  | 'FINISHED'
  | 'DEAD_LETTERED';

export interface Cause {
  code: CauseCode;
  message: string;
  /** RATE_LIMITED: the policy key whose rate is spent (GLOBAL, TYPE:…, OWNER:…, KEY:…), and when its next slot opens. */
  scope?: string;
  nextSlotAt?: Date;
}

/** A rate that applies to the task (rules/rates.ts): its policy, the scope its starts count in, and the window now. */

export type { RateState };

export interface Diagnosis {
  task: Task;
  attempts: AttemptRecord[];
  failures: FailureRow[];
  /** `expiries`: leases the task lost; `quarantined`: from then on a worker runs it alone (core/task.ts). */
  lease: { status: LeaseStatus; remainingSeconds: number | null; expiries: number; quarantined: boolean };
  /** Durable steps (ctx.step) the current attempt cycle completed: a retry resumes after the last. */
  steps: StepSummary;
  /** The rates that apply to a waiting task (QUEUED, RETRY_WAIT), spent or not; empty otherwise. */
  rates: RateState[];
  /** Most important first; `verdict` is the first one's message. */
  causes: Cause[];
  verdict: string;
}

export interface DiagnoseOptions {
  scope: Scope;
  /** The workers' default limits (policy rows override them). */
  globalConcurrency: number;
  typeConcurrency: number;
  /** A worker counts as alive if seen this recently. */
  workerSeenWithinMs: number;
}

/** A blocked task waits for the ends of its parents (a flow) or of the children its fan-out made: which, by id and status. */
async function explainBlocked(store: Store, task: Task, add: (code: CauseCode, message: string) => void): Promise<void> {
  const { parents } = await store.listDependencies({ taskId: task.id, scope: Scope.global() });
  const open = parents.filter((p) => p.resolution === null);
  const children = open.filter((p) => p.fanOut);
  const flow = open.filter((p) => !p.fanOut);
  const list = (links: typeof open) => names(links.map((l) => `${l.parentId} (${l.task?.status ?? 'gone'})`));
  if (flow.length > 0) add('WAITING_FOR_PARENTS', `waits for parents ${list(flow)}: it is queued when the last of them ends`);
  if (children.length > 0)
    add('WAITING_FOR_CHILDREN', `waits for the ${children.length} children its handler made (${list(children)}): it runs again when they have ended`);
  if (open.length === 0) add('WAITING_FOR_PARENTS', `waits for ${task.pendingParents} parent(s) whose edges are gone`);
}

/** A waiting task of a sequence waits for its key's head: which, and whether that head waits for an operator. */
async function explainSequence(store: Store, task: Task, add: (code: CauseCode, message: string) => void): Promise<void> {
  const [key] = await store.listSequences({ scope: Scope.global(), key: task.sequenceKey!, limit: 1 });
  const head = key?.head;
  const behind = `task ${task.sequenceSeq} of sequence ${JSON.stringify(task.sequenceKey)} (${key?.waiting ?? '?'} waiting)`;
  if (head && key.blocked) {
    const why =
      head.status === 'FAILED' ? `dead-lettered (${head.lastErrorCode ?? 'unknown error'}): replay it, or skip it (sequences skip)` : 'paused: resume it';
    add('SEQUENCE_BLOCKED', `${behind}: its head ${head.id} is ${why}`);
  } else if (head) {
    add('WAITING_IN_SEQUENCE', `${behind}: runs after its head ${head.id} (${head.status}) and the tasks before it`);
  } else {
    add('WAITING_IN_SEQUENCE', `${behind}: nothing holds the key; it is released by the next end or submit of the key`);
  }
}

/** At most five, then how many more. */
function names(items: readonly string[]): string {
  return items.length <= 5 ? items.join(', ') : `${items.slice(0, 5).join(', ')} and ${items.length - 5} more`;
}

export async function diagnose(store: Store, id: string, options: DiagnoseOptions): Promise<Diagnosis> {
  const task = await store.getTask({ id, scope: options.scope });
  if (!task) throw new NotFoundError('task', id);
  const [attempts, failures, now, policies, leased, workers, steps] = await Promise.all([
    store.listAttempts({ taskId: id }),
    store.listFailures({ taskId: id, limit: 5 }),
    store.now(),
    store.listPolicies(),
    store.leasedCounts(),
    store.listWorkers({ seenWithinMs: options.workerSeenWithinMs }),
    store.listSteps({ taskId: id, currentCycleOnly: true }),
  ]);
  const lease = leaseStatus(task, now);
  const causes: Cause[] = [];
  const add = (code: CauseCode, message: string, more: Partial<Cause> = {}): void => void causes.push({ code, message, ...more });
  let rates: RateState[] = [];
  const expiredAttempts = attempts.filter((a) => a.outcome === 'LEASE_EXPIRED').length;
  if (expiredAttempts >= 2) {
    add(
      'LEASE_EXPIRING_REPEATEDLY',
      `${expiredAttempts} attempts lost their lease: the lease is too short for the work, heartbeats are too rare, the database connection is unstable, the worker is overloaded or being restarted, or the handler crashes its process (a poison pill)${isQuarantined(task) ? '; the task is quarantined: a worker runs it alone, and each lease it loses now spends an attempt' : ''}`,
    );
  }
  switch (task.status) {
    case 'BLOCKED':
      if (task.sequenceKey !== null) await explainSequence(store, task, add);
      else await explainBlocked(store, task, add);
      break;
    case 'CANCELLED':
      if (task.lastErrorCode === ErrorCode.PARENT_FAILED) {
        const failed = (await store.listDependencies({ taskId: id, scope: options.scope })).parents.filter((p) => p.resolution === 'FAILED');
        add(
          'CANCELLED_BY_PARENT',
          `cancelled because ${failed.length === 1 ? 'its parent' : 'parents'} ${names(failed.map((p) => p.parentId))} failed or were cancelled; retry the flow (or the parent) to run it`,
        );
        break;
      }
      add('FINISHED', `the task finished ${task.status}`);
      break;
    case 'SUCCESS':
    case 'PARTIAL_SUCCESS':
      add('FINISHED', `the task finished ${task.status}`);
      break;
    case 'FAILED':
      add(
        'DEAD_LETTERED',
        `the task failed for good (${task.lastErrorCode ?? 'unknown error'}) and is in the dead-letter queue; fix the cause, then replay it`,
      );
      break;
    case 'PAUSED':
      add('PAUSED', 'the task is paused: resume it to run it');
      break;
    case 'CANCEL_REQUESTED':
      add('CANCEL_REQUESTED', 'cancellation was requested; the worker stops the handler at its next check, or recovery ends it after the lease');
      break;
    case 'RUNNING':
      if (lease.status === 'EXPIRED')
        add('LEASE_EXPIRED', `the lease of ${task.leaseOwner} expired: the worker died or stalled; the recovery sweep will requeue the task`);
      else add('RUNNING', `running on ${task.leaseOwner}, lease ${lease.remainingSeconds} s left`);
      break;
    case 'QUEUED':
    case 'RETRY_WAIT': {
      const blocked = waitingCauses(task, now, { policies, leased, workers, options }, add);
      const ownerBlocked = await ownerCauses(store, task, policies, options.scope, add);
      rates = await rateStates(store, task, policies);
      for (const rate of rates.filter((r) => r.nextSlotAt !== null)) {
        add(
          'RATE_LIMITED',
          `the rate of ${rate.scope}${rate.policyKey === rate.scope ? '' : ` (policy ${rate.policyKey})`} is spent: ${rate.used} of ${rate.rateLimit} starts in the last ${rate.ratePeriodMs} ms; the next slot opens at ${rate.nextSlotAt!.toISOString()}`,
          { scope: rate.scope, nextSlotAt: rate.nextSlotAt! },
        );
      }
      if (!blocked && !ownerBlocked && !rates.some((r) => r.nextSlotAt !== null)) add('READY', 'claimable now: a worker should pick it up at its next poll');
    }
  }
  return { task, attempts, failures, lease, steps: stepSummary(steps), rates, causes, verdict: causes[0]!.message };
}

function waitingCauses(
  task: Task,
  now: Date,
  context: {
    policies: Awaited<ReturnType<Store['listPolicies']>>;
    leased: Record<string, number>;
    workers: Awaited<ReturnType<Store['listWorkers']>>;
    options: DiagnoseOptions;
  },
  add: (code: CauseCode, message: string) => void,
): boolean {
  const { policies, leased, workers, options } = context;
  const global = policies.find((p) => p.policyKey === GLOBAL_POLICY_KEY);
  const typePolicy = policies.find((p) => p.policyKey === typePolicyKey(task.taskType));
  let blocked = false;
  if (task.deadlineAt && task.deadlineAt.getTime() <= now.getTime()) {
    add('PAST_DEADLINE', `its deadline ${task.deadlineAt.toISOString()} has passed: it will never be claimed, and the sweep fails it (DEADLINE_EXCEEDED)`);
    blocked = true;
  }
  if (!workers.some((w) => w.taskTypes.includes(task.taskType))) {
    add('NO_WORKER', `no live worker has a handler for type ${task.taskType}: start a worker that registers it`);
    blocked = true;
  }
  if (global?.enabled === false || typePolicy?.enabled === false) {
    add('POLICY_DISABLED', `claiming is disabled by the ${global?.enabled === false ? 'GLOBAL' : typePolicyKey(task.taskType)} policy`);
    blocked = true;
  }
  if (task.availableAt.getTime() > now.getTime()) {
    const seconds = Math.ceil((task.availableAt.getTime() - now.getTime()) / 1000);
    add(
      task.status === 'RETRY_WAIT' ? 'WAITING_FOR_RETRY' : 'NOT_YET_AVAILABLE',
      `${task.status === 'RETRY_WAIT' ? 'waiting out its retry backoff' : 'not available yet'}: it becomes claimable at ${task.availableAt.toISOString()} (in ${seconds} s)`,
    );
    blocked = true;
  }
  const total = Object.values(leased).reduce((sum, n) => sum + n, 0);
  const globalCap = global?.maxConcurrency ?? options.globalConcurrency;
  const typeCap = typePolicy?.maxConcurrency ?? options.typeConcurrency;
  if (total >= globalCap) {
    add('GLOBAL_LIMIT_FULL', `the global limit is full: ${total} of ${globalCap} tasks running`);
    blocked = true;
  }
  if ((leased[task.taskType] ?? 0) >= typeCap) {
    add('TYPE_LIMIT_FULL', `the limit of type ${task.taskType} is full: ${leased[task.taskType]} of ${typeCap} running`);
    blocked = true;
  }
  return blocked;
}

/**
 * The owner's limit (its OWNER: policy): full when the owner's leased tasks
 * reach it, closed when the policy is disabled; true when it blocks. Counted
 * only for a waiting task whose owner has a limit, at most limit rows read.
 */
async function ownerCauses(
  store: Store,
  task: Task,
  policies: Awaited<ReturnType<Store['listPolicies']>>,
  scope: Scope,
  add: (code: CauseCode, message: string) => void,
): Promise<boolean> {
  const policy = task.owner === null ? undefined : policies.find((p) => p.policyKey === ownerPolicyKey(task.owner!));
  if (!policy) return false;
  if (!policy.enabled) {
    add('POLICY_DISABLED', `claiming is disabled by the ${policy.policyKey} policy`);
    return true;
  }
  if (policy.maxConcurrency === null) return false;
  const page = await store.listTasks({ scope, owner: task.owner, status: ['RUNNING', 'CANCEL_REQUESTED'], limit: policy.maxConcurrency });
  if (page.tasks.length < policy.maxConcurrency) return false;
  add('OWNER_LIMIT_FULL', `the limit of owner ${task.owner} is full: ${page.tasks.length} of ${policy.maxConcurrency} running`);
  return true;
}

function leaseStatus(task: Task, now: Date): Diagnosis['lease'] {
  const history = { expiries: task.leaseExpiries, quarantined: isQuarantined(task) };
  if (task.leaseUntil === null) return { status: 'NO_LEASE', remainingSeconds: null, ...history };
  const remaining = Math.floor((task.leaseUntil.getTime() - now.getTime()) / 1000);
  return { status: remaining < 0 ? 'EXPIRED' : 'ACTIVE', remainingSeconds: remaining, ...history };
}
