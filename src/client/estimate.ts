/**
 * When will my task start? (issue 27, part 4.) A waiting task's position
 * under every limit that binds it — one entry per limit kind — and an
 * estimate from recent throughput, with the reason. Each kind answers for
 * itself: how many tasks its scope has ahead of this one in claim order, how
 * many slots its limit leaves free, and how fast its scope's attempts have
 * been finishing; the task starts when the slowest of them lets it.
 *
 * Extension point: LIMIT_KINDS. A new limit (a rate limit, a sequence's head)
 * adds a LimitKind answering a LimitBind from the EstimateContext; nothing
 * else changes. The estimate is a model of a steady drain, not a promise:
 * a burst of higher-priority submits, a limit changed (by hand or adaptively)
 * or workers stopping move it.
 */
import type { Task } from '../core/task.js';
import { GLOBAL_POLICY_KEY, ownerPolicyKey, typePolicyKey } from '../core/policy-keys.js';
import { ValidationError } from '../core/errors.js';
import { estimateStoreOf, type AheadScope, type EstimateStore } from '../store/estimates.js';
import type { Policy, Store } from '../store/types.js';
import { Scope } from '../core/scope.js';
import { rateStates } from './rates.js';

/** WAITING: QUEUED or RETRY_WAIT, or BLOCKED for its sequence's turn (estimated); the others answer without an estimate. */
export type EstimateState = 'WAITING' | 'STARTED' | 'ENDED' | 'BLOCKED' | 'PAUSED';

/** One limit's view of the task. */
export interface LimitBind {
  /** 'type' | 'owner' | 'global' | 'rate' | 'sequence' (LIMIT_KINDS; a sequence binds a task waiting its turn). */
  kind: string;
  /** 1 + ahead: the task's place among the scope's waiting tasks in claim order. */
  position: number;
  /** Claimable tasks of the scope before it in claim order (due by the time it is due). */
  ahead: number;
  /** `ahead` reached the count's cap: at least that many. */
  aheadAtLeast: boolean;
  /** The limit in force (null: the scope has none). */
  limit: number | null;
  /** Leased tasks the limit counts now. */
  running: number;
  /** Finished attempts per second of the scope over the recent window (null: none finished). */
  throughputPerSecond: number | null;
  /** How long this limit holds the task back from now (0: it does not; null: cannot tell — nothing to estimate from, or disabled). */
  waitMs: number | null;
  reason: string;
}

export interface TaskEstimate {
  taskId: string;
  status: Task['status'];
  state: EstimateState;
  /** Every limit that binds a waiting task; empty for the other states. */
  binds: LimitBind[];
  /** The estimated start (null: started, ended, blocked, paused, or no throughput to estimate from). */
  startsAt: Date | null;
  /** When it started (STARTED). */
  startedAt: Date | null;
  reason: string;
  /** The database clock the estimate was computed at. */
  at: Date;
}

export interface EstimateOptions {
  /** The throughput window. Default 60000 (1 minute). */
  windowMs?: number;
}

/** What a limit kind reads from. */
export interface EstimateContext {
  task: Task;
  now: Date;
  /** When the task is due: max(now, available_at). */
  dueBy: Date;
  windowMs: number;
  policies: ReadonlyMap<string, Policy>;
  /** The client's idea of the workers' defaults (ClientOptions.globalConcurrency / typeConcurrency). */
  defaults: { globalConcurrency: number; typeConcurrency: number };
  reads: EstimateStore;
  store: Store;
}

export interface LimitKind {
  kind: string;
  /** The bind, or null when this kind does not apply to the task (an owner limit on a task without owner). */
  bind(ctx: EstimateContext): Promise<LimitBind | null>;
}

/** The ahead count stops here (rules/estimate.ts): a deep backlog costs a bounded walk of the claim index. */
export const AHEAD_CAP = 100_000;

const typeKind: LimitKind = {
  kind: 'type',
  async bind(ctx) {
    const policy = ctx.policies.get(typePolicyKey(ctx.task.taskType));
    const running = (await ctx.store.leasedCounts())[ctx.task.taskType] ?? 0;
    const limit = policy?.maxConcurrency ?? ctx.defaults.typeConcurrency;
    return scopeBind(ctx, 'type', `type ${ctx.task.taskType}`, {
      limit,
      running,
      disabled: policy?.enabled === false,
      throughput: { taskType: ctx.task.taskType },
    });
  },
};

const ownerKind: LimitKind = {
  kind: 'owner',
  async bind(ctx) {
    const owner = ctx.task.owner;
    const policy = owner === null ? undefined : ctx.policies.get(ownerPolicyKey(owner));
    // Owners are unlimited unless a policy of theirs says otherwise (the workers' ownerConcurrency is not known here).
    if (owner === null || !policy) return null;
    const running = await ctx.reads.leasedOfOwner({ owner });
    return scopeBind(ctx, 'owner', `owner ${owner}`, { limit: policy.maxConcurrency, running, disabled: policy.enabled === false, throughput: { owner } });
  },
};

const globalKind: LimitKind = {
  kind: 'global',
  async bind(ctx) {
    const policy = ctx.policies.get(GLOBAL_POLICY_KEY);
    const running = Object.values(await ctx.store.leasedCounts()).reduce((sum, n) => sum + n, 0);
    const limit = policy?.maxConcurrency ?? ctx.defaults.globalConcurrency;
    return scopeBind(ctx, 'global', 'all types', { limit, running, disabled: policy?.enabled === false, throughput: {} });
  },
};

/**
 * A rate (N starts per period) on the task's type, owner, rate key or all: its scope's tasks ahead take the room
 * its window has left, then N per period. The slowest of the task's rates binds.
 */
const rateKind: LimitKind = {
  kind: 'rate',
  async bind(ctx) {
    const states = await rateStates(ctx.store, ctx.task, [...ctx.policies.values()]);
    let slowest: LimitBind | null = null;
    for (const state of states) {
      const scope: AheadScope =
        state.scope === GLOBAL_POLICY_KEY ? 'global' : state.scope.startsWith('TYPE:') ? 'type' : state.scope.startsWith('OWNER:') ? 'owner' : 'rateKey';
      const ahead = await ctx.reads.countAhead({ taskId: ctx.task.id, scope, dueBy: ctx.dueBy, cap: AHEAD_CAP });
      const free = Math.max(0, state.rateLimit - state.used);
      const nextSlotMs = state.nextSlotAt === null ? 0 : Math.max(0, state.nextSlotAt.getTime() - ctx.now.getTime());
      const waitMs = ahead < free ? 0 : nextSlotMs + Math.floor((ahead - free) / state.rateLimit) * state.ratePeriodMs;
      const bind: LimitBind = {
        kind: 'rate',
        position: ahead + 1,
        ahead,
        aheadAtLeast: ahead >= AHEAD_CAP,
        limit: state.rateLimit,
        running: state.used,
        throughputPerSecond: state.rateLimit / (state.ratePeriodMs / 1000),
        waitMs,
        reason: `rate ${state.policyKey}${state.scope !== state.policyKey ? ` (${state.scope})` : ''}: ${state.used} of ${state.rateLimit} starts in the last ${seconds(state.ratePeriodMs)} s, ${ahead} ahead${waitMs === 0 ? ': room now' : ` → ~${seconds(waitMs)} s`}`,
      };
      if (slowest === null || waitMs > slowest.waitMs!) slowest = bind;
    }
    return slowest;
  },
};

/**
 * A sequenced task waiting for its turn (BLOCKED): the tasks of its key before it run one at a time, each about
 * as long as the type's recent attempts; a head waiting for an operator (dead-lettered, paused) makes it unknown.
 */
const sequenceKind: LimitKind = {
  kind: 'sequence',
  async bind(ctx) {
    const key = ctx.task.sequenceKey;
    if (key === null || ctx.task.pendingParents === 0) return null;
    const [summary] = await ctx.store.listSequences({ scope: Scope.global(), key, limit: 1 });
    const ahead = await ctx.reads.sequenceAhead({ taskId: ctx.task.id });
    const meanRunMs = await ctx.reads.meanRunMs({ since: new Date(ctx.now.getTime() - ctx.windowMs), taskType: ctx.task.taskType });
    const label = `sequence ${JSON.stringify(key)}`;
    const base = {
      kind: 'sequence',
      position: ahead + 1,
      ahead,
      aheadAtLeast: false,
      limit: 1,
      running: summary?.head?.status === 'RUNNING' ? 1 : 0,
      throughputPerSecond: meanRunMs === null || meanRunMs <= 0 ? null : 1000 / meanRunMs,
    };
    if (summary?.blocked && summary.head)
      return { ...base, waitMs: null, reason: `${label}: its head ${summary.head.id} is ${summary.head.status}: the key waits for an operator` };
    if (meanRunMs === null)
      return {
        ...base,
        waitMs: null,
        reason: `${label}: ${ahead} ahead, and no attempt of ${ctx.task.taskType} finished in the last ${seconds(ctx.windowMs)} s to estimate from`,
      };
    const waitMs = Math.round(ahead * meanRunMs);
    return { ...base, waitMs, reason: `${label}: ${ahead} ahead, one at a time, ~${seconds(Math.round(meanRunMs))} s each → ~${seconds(waitMs)} s` };
  },
};

/** The limits a waiting task is estimated under, in this order; add a kind here (see the module comment). */
export const LIMIT_KINDS: LimitKind[] = [typeKind, ownerKind, globalKind, rateKind];

async function scopeBind(
  ctx: EstimateContext,
  kind: AheadScope,
  label: string,
  p: { limit: number | null; running: number; disabled: boolean; throughput: { taskType?: string; owner?: string } },
): Promise<LimitBind> {
  const ahead = await ctx.reads.countAhead({ taskId: ctx.task.id, scope: kind, dueBy: ctx.dueBy, cap: AHEAD_CAP });
  const throughputPerSecond = await throughput(ctx, p.throughput);
  const base = { kind, position: ahead + 1, ahead, aheadAtLeast: ahead >= AHEAD_CAP, limit: p.limit, running: p.running, throughputPerSecond };
  const aheadText = `${ahead >= AHEAD_CAP ? 'at least ' : ''}${ahead} ahead`;
  if (p.disabled) return { ...base, waitMs: null, reason: `${label} is disabled by policy: nothing starts until it is enabled (${aheadText})` };
  const free = p.limit === null ? Infinity : Math.max(0, p.limit - p.running);
  const limitText = p.limit === null ? 'no limit' : `limit ${p.limit}, ${p.running} running`;
  if (ahead < free) return { ...base, waitMs: 0, reason: `${label}: ${limitText}, ${aheadText}: a slot is free` };
  const rateText = throughputPerSecond === null ? '' : `${throughputPerSecond.toFixed(2)}/s`;
  if (throughputPerSecond === null)
    return {
      ...base,
      waitMs: null,
      reason: `${label}: ${limitText}, ${aheadText}, and no attempt finished in the last ${seconds(ctx.windowMs)} s to estimate from`,
    };
  const waitMs = Math.round(((ahead - (Number.isFinite(free) ? free : 0) + 1) / throughputPerSecond) * 1000);
  return {
    ...base,
    waitMs,
    reason: `${label}: ${limitText}, ${aheadText}, finishing ${rateText} over the last ${seconds(ctx.windowMs)} s → ~${seconds(waitMs)} s`,
  };
}

/**
 * Finished attempts per second of a scope over the window: the pace between its first and last finish (a drain's
 * ramp-up before the first, and idle time after the last, do not dilute it). One finish, or all in the same
 * instant: counted over the whole window.
 */
async function throughput(ctx: EstimateContext, scope: { taskType?: string; owner?: string }): Promise<number | null> {
  const since = new Date(ctx.now.getTime() - ctx.windowMs);
  const { finished, firstFinish, lastFinish } = await ctx.reads.finishedSince({ since, ...scope });
  if (finished === 0 || firstFinish === null || lastFinish === null) return null;
  const spanMs = lastFinish.getTime() - firstFinish.getTime();
  if (finished < 2 || spanMs <= 0) return finished / (ctx.windowMs / 1000);
  return (finished - 1) / (spanMs / 1000);
}

function seconds(ms: number): string {
  return ms >= 10_000 || ms % 1000 === 0 ? String(Math.round(ms / 1000)) : (ms / 1000).toFixed(1);
}

/** The estimate of one task (read in scope by the caller). */
export async function estimateTask(
  store: Store,
  task: Task,
  defaults: EstimateContext['defaults'],
  options: EstimateOptions = {},
  kinds: readonly LimitKind[] = LIMIT_KINDS,
): Promise<TaskEstimate> {
  const windowMs = options.windowMs ?? 60_000;
  if (!Number.isInteger(windowMs) || windowMs < 1000 || windowMs > 86_400_000)
    throw new ValidationError(`windowMs must be an integer from 1000 to 86400000, got ${String(windowMs)}`, 'windowMs');
  const now = await store.now();
  const answer = { taskId: task.id, status: task.status, binds: [] as LimitBind[], startsAt: null, startedAt: null, at: now };
  switch (task.status) {
    case 'RUNNING':
    case 'CANCEL_REQUESTED':
      return { ...answer, state: 'STARTED', startedAt: task.startedAt, reason: `started: attempt ${task.attemptCount} is running` };
    case 'BLOCKED':
      // A sequenced task waits for its key's turn: estimated under the sequence alone (the other limits apply once it is queued).
      if (task.sequenceKey !== null) return estimateUnder(store, task, defaults, windowMs, now, answer, [sequenceKind]);
      return { ...answer, state: 'BLOCKED', reason: 'waits for its parents (or the children it made) to end: no estimate until then' };
    case 'PAUSED':
      return { ...answer, state: 'PAUSED', reason: 'paused by an operator: it waits until resumed' };
    case 'QUEUED':
    case 'RETRY_WAIT':
      break;
    default:
      return { ...answer, state: 'ENDED', reason: `ended ${task.status}` };
  }
  return estimateUnder(store, task, defaults, windowMs, now, answer, kinds);
}

async function estimateUnder(
  store: Store,
  task: Task,
  defaults: EstimateContext['defaults'],
  windowMs: number,
  now: Date,
  answer: Omit<TaskEstimate, 'state' | 'reason'>,
  kinds: readonly LimitKind[],
): Promise<TaskEstimate> {
  const dueBy = new Date(Math.max(now.getTime(), task.availableAt.getTime()));
  const policies = new Map((await store.listPolicies()).map((p) => [p.policyKey, p]));
  const ctx: EstimateContext = { task, now, dueBy, windowMs, policies, defaults, reads: await estimateStoreOf(store), store };
  const binds: LimitBind[] = [];
  for (const kind of kinds) {
    const bind = await kind.bind(ctx);
    if (bind) binds.push(bind);
  }
  return { ...answer, state: 'WAITING', binds, ...startOf(binds, now, dueBy) };
}

/** The slowest limit decides; one that cannot tell makes the whole answer unknown. */
function startOf(binds: readonly LimitBind[], now: Date, dueBy: Date): { startsAt: Date | null; reason: string } {
  const unknown = binds.find((b) => b.waitMs === null);
  if (unknown) return { startsAt: null, reason: unknown.reason };
  const slowest = binds.reduce<LimitBind | null>((worst, b) => (worst === null || b.waitMs! > worst.waitMs! ? b : worst), null);
  const waitMs = slowest?.waitMs ?? 0;
  const startsAt = new Date(Math.max(now.getTime() + waitMs, dueBy.getTime()));
  if (dueBy.getTime() > now.getTime() + waitMs)
    return { startsAt, reason: `not due until ${dueBy.toISOString()}; then ${slowest?.reason ?? 'no limit binds'}` };
  if (waitMs === 0) return { startsAt, reason: 'a slot is free under every limit: it starts at the next claim' };
  return { startsAt, reason: slowest!.reason };
}
