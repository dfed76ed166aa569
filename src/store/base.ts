/**
 * What every store does alike, written once: the closed-store check, the
 * empty-input short cuts, the wake-ups a write owes the workers, and the
 * hand-off of driver errors to the dialect's mapping. A dialect class
 * extends StoreBase and calls guardStore(itsClass) once after its
 * declaration: each contract method is then wrapped, on the prototype, so
 * that no dialect repeats these lines in its thirty methods.
 */
import { StoreClosedError, ValidationError } from '../core/errors.js';
import { TaskStatus } from '../core/status.js';
import { LocalBus } from './local-bus.js';
import { createdTypes } from './submit-wakeups.js';
import { pingLocal, watchLocal } from './outcome-watch.js';
import type {
  AttemptOutcome,
  ClaimParams,
  Dialect,
  FinishAndClaimResult,
  InsertTaskResult,
  PayloadLimit,
  Store,
  StoreCapabilities,
  StoreEvent,
  StoreListener,
} from './types.js';

type Method = Exclude<{ [K in keyof Store]: Store[K] extends (...args: never[]) => unknown ? K : never }[keyof Store], 'close'>;
type Answer<M extends Method> = Awaited<ReturnType<Store[M]>>;
type Params<M extends Method> = Parameters<Store[M]>[0];

/** Calls with nothing to do answer at once, the same on every dialect (and never open a transaction). */
const EMPTY_ANSWERS: { [M in Method]?: (params: Params<M>) => Answer<M> | undefined } = {
  insertTasks: (p) => (p.tasks.length === 0 ? [] : undefined),
  insertFlow: (p) => (p.tasks.length === 0 && p.edges.length === 0 ? [] : undefined),
  claimTasks: (p) => (p.limit <= 0 || p.taskTypes.length === 0 ? [] : undefined),
  renewLeases: (p) => (p.leases.length === 0 ? { renewed: [], cancelRequested: [], lost: [] } : undefined),
  finishAttempts: (p) => (p.outcomes.length === 0 ? { applied: [], deadLetters: [] } : undefined),
  releaseTasks: (p) => (p.leases.length === 0 ? 0 : undefined),
  changeStatus: (p) => (p.ids.length === 0 ? [] : undefined),
  releaseSequences: (p) => (p.keys.length === 0 ? { released: [] } : undefined),
  replayDeadLetters: (p) => (p.ids.length === 0 ? [] : undefined),
  archiveDeadLetters: (p) => (p.ids.length === 0 ? 0 : undefined),
};

/**
 * Inputs checked before any dialect sees them (the Store is public: a
 * producer other than our client may call it). Payload text must be one
 * JSON value — refused as VALIDATION otherwise, writing nothing; text that
 * carries a lone surrogate (valid to JSON.parse, not to every database's
 * encoding) is stored as the same value with the surrogate escaped.
 */
const CHECKED_INPUTS: { [M in Method]?: (params: Params<M>) => Params<M> } = {
  insertTasks: (p) => {
    const tasks = checkedPayloads(p.tasks);
    return tasks === p.tasks ? p : { ...p, tasks };
  },
  // The tasks a publish builds are checked as they are built, inside its transaction.
  publishEvent: (p) => ({ ...p, build: (subscriptions) => checkedPayloads(p.build(subscriptions)) }),
  insertFlow: (p) => {
    const tasks = checkedPayloads(p.tasks);
    return tasks === p.tasks ? p : { ...p, tasks };
  },
  awaitChildren: (p) => {
    const children = checkedPayloads(p.children);
    return children === p.children ? p : { ...p, children };
  },
  editTask: (p) => {
    const payloadJson = p.changes.payloadJson;
    if (payloadJson === undefined) return p;
    const [checked] = checkedPayloads([{ payloadJson }]);
    return checked!.payloadJson === payloadJson ? p : { ...p, changes: { ...p.changes, payloadJson: checked!.payloadJson } };
  },
};

function checkedPayloads<T extends { payloadJson: string }>(tasks: readonly T[]): readonly T[] {
  return tasks.every((task, i) => isJsonText(task.payloadJson, i)) ? tasks : tasks.map(jsonTextOf);
}

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** True when the text is one JSON value as it should be stored; throws VALIDATION when it is not JSON at all. */
function isJsonText(text: string, index: number): boolean {
  try {
    JSON.parse(text);
  } catch (error) {
    throw new ValidationError(`tasks[${index}]: payload is not JSON text (${(error as Error).message}): ${JSON.stringify(text.slice(0, 80))}`, 'payload');
  }
  return !LONE_SURROGATE.test(text);
}

function jsonTextOf<T extends { payloadJson: string }>(task: T, index: number): T {
  return isJsonText(task.payloadJson, index) ? task : { ...task, payloadJson: JSON.stringify(JSON.parse(task.payloadJson)) };
}

function releasedWakeups(types: readonly string[] | undefined): StoreEvent[] {
  return types && types.length > 0 ? [{ kind: 'submitted', taskTypes: [...new Set(types)] }] : [];
}

const WAKE_ALL: StoreEvent = Object.freeze({ kind: 'submitted', taskTypes: Object.freeze([]) as readonly string[] });

function submittedEvents(results: readonly InsertTaskResult[]): StoreEvent[] {
  const types = createdTypes(results);
  return types.length > 0 ? [{ kind: 'submitted', taskTypes: types }] : [];
}

/** The wake-ups a successful write owes idle workers: new or requeued work, cancel requests. */
const WAKEUPS: { [M in Method]?: (answer: Answer<M>) => StoreEvent[] } = {
  insertTasks: (results) => submittedEvents(results),
  publishEvent: ({ results }) => submittedEvents(results),
  changeStatus: (results) => {
    const cancelled = results.filter((r) => r.applied && r.status === TaskStatus.CANCEL_REQUESTED).map((r) => r.id);
    const events: StoreEvent[] = cancelled.length > 0 ? [{ kind: 'cancelRequested', taskIds: cancelled }] : [];
    if (results.some((r) => r.applied && r.status === TaskStatus.QUEUED)) events.push(WAKE_ALL);
    return events;
  },
  releaseTasks: (released) => (released > 0 ? [WAKE_ALL] : []),
  // An edit may make a waiting task due now (an earlier start, a higher priority).
  editTask: (result) => (result.applied && result.status === TaskStatus.QUEUED ? [WAKE_ALL] : []),
  finishAttempts: (result) => releasedWakeups(result.released),
  finishAndClaim: (result) => releasedWakeups(result.released),
  insertFlow: (results) => {
    const types = createdTypes(results.filter((r) => r.task.status !== TaskStatus.BLOCKED));
    return types.length > 0 ? [{ kind: 'submitted', taskTypes: types }] : [];
  },
  awaitChildren: (result) => {
    const types = createdTypes(result.children.filter((r) => r.task.status !== TaskStatus.BLOCKED));
    return types.length > 0 ? [{ kind: 'submitted', taskTypes: types }] : [];
  },
  recover: (result) => (result.requeued + result.retriesDue > 0 ? [WAKE_ALL] : []),
  replayDeadLetters: (results) => (results.some((r) => r.outcome === 'REPLAYED') ? [WAKE_ALL] : []),
  skipSequenceHead: (result) => releasedWakeups(result.released),
  releaseSequences: (result) => releasedWakeups(result.released),
  setSequencePolicy: (result) => releasedWakeups(result.released),
};

/**
 * Writes that may end a task, and whether this answer says one did: this
 * process's waiters re-read after them (outcome-watch.ts). A recovery pass
 * that ended nothing wakes nobody: workers run one every few seconds.
 */
const ENDS_TASKS: { [M in Method]?: (answer: Answer<M>) => boolean } = {
  finishAttempts: () => true,
  awaitChildren: (result) => result.applied,
  finishAndClaim: () => true,
  changeStatus: (results) => results.some((r) => r.applied),
  recover: (result) => result.failed + result.cancelled + result.deadlineExpired > 0,
};

/** Every method of the contract, checked against it by the compiler. */
const METHODS = [
  'migrate',
  'now',
  'schemaVersion',
  'payloadLimit',
  'explainClaim',
  'explainListTasks',
  'subscribe',
  'insertTasks',
  'insertFlow',
  'listDependencies',
  'getFlow',
  'awaitChildren',
  'getTask',
  'watchOutcome',
  'listTasks',
  'countByStatus',
  'countTasks',
  'changeStatus',
  'editTask',
  'claimTasks',
  'renewLeases',
  'saveProgress',
  'finishAttempts',
  'finishAndClaim',
  'releaseTasks',
  'recordStep',
  'listSteps',
  'appendTaskLogs',
  'listTaskLogs',
  'rateWindows',
  'listRateStarts',
  'recover',
  'listAttempts',
  'listTaskActions',
  'listFailures',
  'listDeadLetters',
  'countDeadLetters',
  'replayDeadLetters',
  'archiveDeadLetters',
  'savePolicy',
  'listPolicies',
  'deletePolicy',
  'purgeTerminalTasks',
  'purgeDeadLetters',
  'registerWorker',
  'unregisterWorker',
  'listWorkers',
  'leasedCounts',
  'analysisData',
  'publishEvent',
  'saveSubscription',
  'deleteSubscription',
  'listSubscriptions',
  'listSequences',
  'skipSequenceHead',
  'releaseSequences',
  'setSequencePolicy',
] as const satisfies readonly Method[];
type Missing = Exclude<Method, (typeof METHODS)[number]>;
const everyMethodListed: Missing extends never ? true : Missing = true;
void everyMethodListed;

export abstract class StoreBase {
  abstract readonly dialect: Dialect;
  abstract readonly capabilities: StoreCapabilities;
  /** Set by close(); every other call then fails with StoreClosedError. */
  protected closed = false;
  /** In-process wake-ups: workers of this process hear this process's writes at once. */
  protected abstract readonly bus: LocalBus;

  /** The store's class name for messages. */
  protected get storeName(): string {
    return this.constructor.name;
  }

  /** Driver error → project error (errors.ts of the dialect). Errors of the project pass through. */
  protected abstract mapError(error: unknown): Error;

  /** Sends the wake-ups a write owes. In-process by default; a dialect with a server channel overrides. */
  protected wake(_method: Method, events: readonly StoreEvent[]): void | Promise<void> {
    for (const event of events) this.bus.publish(event);
  }

  subscribe(listener: StoreListener): () => void {
    return this.bus.subscribe(listener);
  }

  /** This process's writes by default; a dialect that hears other processes adds them. */
  async watchOutcome(params: { taskId: string; listener: () => void }): Promise<() => Promise<void>> {
    const stop = watchLocal(this.bus, params.listener);
    return async () => stop();
  }

  /** None by default: only the client's maxPayloadBytes applies. */
  async payloadLimit(): Promise<PayloadLimit | null> {
    return null;
  }

  /** Two calls where a dialect has no one-round-trip form (capabilities.finishAndClaim is false). */
  async finishAndClaim(params: { outcomes: readonly AttemptOutcome[]; claim: ClaimParams }): Promise<FinishAndClaimResult> {
    const self = this as unknown as Store;
    const finished = await self.finishAttempts({ outcomes: params.outcomes });
    return { ...finished, claimed: await self.claimTasks(params.claim) };
  }
}

/** Wraps every contract method of `store` (a StoreBase subclass): closed check, short cuts, error mapping, wake-ups. */
export function guardStore(store: abstract new (...args: never[]) => StoreBase): void {
  const proto = store.prototype as unknown as Record<string, (...args: unknown[]) => unknown>;
  for (const name of METHODS) {
    const original = proto[name];
    if (typeof original !== 'function') throw new Error(`${store.name} does not implement ${name}`);
    proto[name] = name === 'subscribe' ? guardedSync(name, original) : guardedAsync(name, original);
  }
}

interface Guarded {
  closed: boolean;
  storeName: string;
  mapError(error: unknown): Error;
  wake(method: Method, events: readonly StoreEvent[]): void | Promise<void>;
  bus: LocalBus;
}

function guardedSync(name: Method, original: (...args: unknown[]) => unknown) {
  return function (this: Guarded, ...args: unknown[]): unknown {
    if (this.closed) throw new StoreClosedError(this.storeName, name);
    return original.apply(this, args);
  };
}

function guardedAsync(name: Method, original: (...args: unknown[]) => unknown) {
  const empty = EMPTY_ANSWERS[name] as ((params: unknown) => unknown) | undefined;
  const wakeups = WAKEUPS[name] as ((answer: unknown) => StoreEvent[]) | undefined;
  const endsTasks = ENDS_TASKS[name] as ((answer: unknown) => boolean) | undefined;
  const checked = CHECKED_INPUTS[name] as ((params: unknown) => unknown) | undefined;
  return async function (this: Guarded, ...args: unknown[]): Promise<unknown> {
    if (this.closed) throw new StoreClosedError(this.storeName, name);
    if (checked) args = [checked(args[0]), ...args.slice(1)];
    const shortCut = empty?.(args[0]);
    if (shortCut !== undefined) return shortCut;
    let answer: unknown;
    try {
      answer = await original.apply(this, args);
    } catch (error) {
      throw this.mapError(error);
    }
    if (endsTasks?.(answer)) pingLocal(this.bus);
    const events = wakeups?.(answer);
    if (events && events.length > 0) await this.wake(name, events);
    return answer;
  };
}

/**
 * A side store on a store's connections (API tokens, schedules): each of its
 * methods gets its parent's closed check (STORE_CLOSED after close()) and
 * error mapping (a missing table is SCHEMA_NOT_MIGRATED, a lost server
 * STORE_UNAVAILABLE…), as the parent's own methods do.
 */
export function guardSideStore<T extends object>(parent: Store, side: T): T {
  const guard = parent as unknown as Guarded;
  return new Proxy(side, {
    get(target, key, receiver) {
      const value: unknown = Reflect.get(target, key, receiver);
      if (typeof value !== 'function' || typeof key !== 'string') return value;
      return async (...args: unknown[]): Promise<unknown> => {
        if (guard.closed) throw new StoreClosedError(guard.storeName, key);
        try {
          return await (value as (...a: unknown[]) => unknown).apply(target, args);
        } catch (error) {
          throw guard.mapError(error);
        }
      };
    },
  });
}

export type { Method as StoreMethod };

/**
 * The worker's own statements about its leases: stores with a lease pool run
 * them, and the wake-ups they owe, there — never on the main pool, which
 * handlers may hold (issue 11, B2).
 */
export const LEASE_METHODS: ReadonlySet<Method> = new Set([
  'renewLeases',
  'saveProgress',
  'recordStep',
  'appendTaskLogs',
  'finishAttempts',
  'finishAndClaim',
  'releaseTasks',
]);
