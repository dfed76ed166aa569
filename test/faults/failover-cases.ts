/**
 * The failover cases (issue 24) on a Patroni cluster of the file's own
 * (patroni.ts), under load: a submitter in this process and two worker
 * processes (fault-child.ts), all through HAProxy, while the fault happens.
 *
 * - switchover: `patronictl switchover` to the synchronous standby;
 * - kill: the primary's postmaster SIGKILLed (primary_start_timeout 0: Patroni
 *   fails over at once rather than restarting it in place);
 * - stale route: the workers reach the primary by an address of its own (a
 *   DNS name or a VIP that moves late; black-hole.ts pointAt), not through
 *   HAProxy. After the switchover the old primary rejoins as a replica — up,
 *   read-only, answering 25006 — and the address still leads there: the
 *   workers' new connections meet it read-only until the address moves to
 *   the new primary, and their pools must not keep those sessions
 *   (connection.ts, errors.ts spoilsConnection; read-only-connection.fast.test.ts
 *   pins that rule — this case passed without it too, the workers' sweep and
 *   registry writes opening fresh connections). Through HAProxy no session
 *   stays on a demoted primary (its /primary check fails and
 *   on-marked-down shutdown-sessions cuts them), so this is the honest way
 *   for a store to meet one.
 *
 * What must hold (issue 24, with synchronous_mode): every acknowledged
 * submit is there (lost 0); every outcome a worker reported written (its
 * `completed` event comes after the write's answer) is SUCCESS afterwards,
 * by that attempt (lost 0); no (task, attempt) ran twice (the handlers'
 * `executions`); both workers resume without a restart; the listeners (the
 * parent's, and the workers') are LISTENing on the new primary, and the
 * parent's self-probe came back there. Reported: seconds from the fault
 * until tasks flow again (the end of the longest pause between completions),
 * the submitters' longest pause, the errors the workers logged.
 *
 * The handlers' tables live on the cluster too (through HAProxy): their rows
 * are acknowledged commits, held to the same promise. A handler's
 * `executions` row may be written after the failover, on the new primary
 * (its write waited for a connection): so a handler that started under a
 * claim the failover lost is seen, and the task's next claim, which carries
 * the same attempt number, shows as a (task, attempt) started twice. (Claims
 * commit synchronously under synchronous replication for that reason:
 * claim.ts.)
 */
import { afterAll, afterEach, beforeAll, describe, expect } from 'vitest';
import { skipNotInstalled } from '../helpers/system-tools.js';
import type { PostgresStore } from '../../src/store/postgres/store.js';
import { waitFor } from '../helpers/wait.js';
import { killAllChildren, type ChildWorker } from '../process/harness.js';
import { BlackHoleProxy } from './black-hole.js';
import { submitUntilStopped, waitForAllSucceeded } from './database-cases.js';
import { clusterTools } from './cluster.js';
import { FaultEnvironment } from './environment.js';
import { allTasks } from './invariants.js';
import { PatroniCluster, patroniTools, type PatroniOptions } from './patroni.js';
import { postgresTargetAt } from './targets.js';

const SETTLE_MS = 180_000;
/** Between submit batches of 20: about 400 tasks a second, which two workers at concurrency 8 keep up with. */
const SUBMIT_PAUSE_MS = 50;

export interface FailoverReport {
  scenario: string;
  synchronous: boolean;
  /** The leader before and after. */
  from: string;
  to: string;
  acknowledgedSubmits: number;
  lostSubmits: number;
  acknowledgedOutcomes: number;
  lostOutcomes: number;
  /** (task, attempt) pairs whose handler started twice. */
  duplicateExecutions: number;
  /** Tasks run again by a later attempt after an outcome that was never acknowledged (at-least-once, allowed). */
  rerunTasks: number;
  /** From the fault (the stale route: from the address's move) to the first completion after the longest pause. */
  secondsUntilTasksFlow: number;
  /** The longest pause between two completions. */
  longestCompletionPauseSeconds: number;
  /** The longest pause between two acknowledged submits. */
  longestSubmitPauseSeconds: number;
  /** Leases the workers gave up or lost (`leaseLost`): their tasks ran again after the sweep. */
  leasesLost: number;
  /** The workers' `error` events since the fault, by operation and message (SQLSTATE or driver words). */
  workerErrors: Record<string, number>;
  violations: string[];
  knownGaps: string[];
}

export interface Fault {
  scenario: string;
  /** The workers reach the cluster at this URL instead of HAProxy's (the stale route). */
  workerUrl?: string;
  /** Injects the fault; returns the leaders before and after, and when to count the recovery from (default: the injection). */
  inject(workers: ChildWorker[]): Promise<{ from: string; to: string; countFrom?: number }>;
}

export function switchover(cluster: PatroniCluster): Fault {
  return { scenario: 'switchover', inject: () => cluster.switchover() };
}

export function killPrimary(cluster: PatroniCluster): Fault {
  return {
    scenario: 'kill',
    async inject() {
      const from = await cluster.killPrimaryPostmaster();
      const to = await waitFor(
        async () => {
          const leader = (await cluster.members()).find((m) => m.role === 'leader' && m.state === 'running');
          return leader && leader.name !== from ? leader.name : undefined;
        },
        `a member other than ${from} to be promoted`,
        SETTLE_MS,
        100,
      );
      return { from, to };
    },
  };
}

/** The stale route (see the header); close the returned route after the case. */
export async function staleRoute(cluster: PatroniCluster): Promise<{ fault: Fault; route: BlackHoleProxy }> {
  const route = await BlackHoleProxy.before(cluster.memberUrl(await cluster.leader()));
  const fault: Fault = {
    scenario: 'stale-route',
    workerUrl: route.address(cluster.url),
    async inject(workers) {
      const { from, to } = await cluster.switchover();
      // The old primary is back as a replica (up, read-only) and the route still leads there.
      await cluster.healthy();
      const since = Date.now();
      const readOnly = (w: ChildWorker) => w.events.filter((e) => e.event === 'error' && (e.at ?? 0) >= since && /read-only/.test(e.message ?? '')).length;
      await waitFor(() => workers.every((w) => readOnly(w) >= 3), 'both workers to meet the demoted primary read-only, 3 times each', SETTLE_MS, 50);
      // The address moves: new connections reach the new primary; those open stay where they are.
      route.pointAt(cluster.memberPort(to));
      return { from, to, countFrom: Date.now() };
    },
  };
  return { fault, route };
}

/** One fault under load (see the header); checks what must hold and returns the figures. */
export async function failoverUnderLoad(env: FaultEnvironment, cluster: PatroniCluster, fault: Fault): Promise<FailoverReport> {
  const extras = fault.workerUrl === undefined ? {} : { storeUrl: fault.workerUrl };
  const workers = ['a', 'b'].map((x) => env.worker(`${fault.scenario}-${x}`, ['work'], { concurrency: 8 }, extras));
  await Promise.all(workers.map((w) => w.until('ready', 60_000)));
  const parent = env.store as PostgresStore;
  const wakeStates = watchWakeups(parent);
  try {
    const load = submitUntilStopped(env, SUBMIT_PAUSE_MS);
    const startedAt = Date.now();
    let injected: { from: string; to: string; countFrom: number };
    let loadStoppedAt = 0;
    try {
      await waitFor(async () => (await env.countStatus('SUCCESS')) >= 100 && parent.wakeups === 'listening', 'progress before the fault', SETTLE_MS, 100);
      const at = Date.now();
      const result = await fault.inject(workers);
      injected = { ...result, countFrom: result.countFrom ?? at };
      expect(await cluster.healthy()).toBe(injected.to);
      const healthyAt = Date.now();
      // Tasks flow again: each worker completes tasks after the cluster healed, without a restart.
      const since = (w: ChildWorker) => w.events.filter((e) => e.event === 'completed' && (e.at ?? 0) > healthyAt).length;
      await waitFor(
        () => workers.every((w) => since(w) > 0) && workers.reduce((sum, w) => sum + since(w), 0) >= 200,
        'both workers to complete tasks again (200 in all)',
        SETTLE_MS,
        50,
      );
    } finally {
      await load.stop();
      loadStoppedAt = Date.now();
    }
    await waitForAllSucceeded(env, workers);

    // The listeners re-subscribed on the new primary: the parent's lost its connection, reconnected and heard its own
    // probe there again (state listening), and every LISTEN connection (the parent's, each worker's) is on it.
    await waitFor(() => parent.wakeups === 'listening', "the parent's listener to hear its probe again", SETTLE_MS, 50);
    const reconnected = wakeStates.seen.slice(wakeStates.seen.indexOf('listening') + 1).some((state) => state !== 'listening');
    const listeners = await waitFor(
      async () => {
        const rows = await cluster.queryMember<{ name: string }>(
          injected.to,
          "SELECT application_name AS name FROM pg_stat_activity WHERE application_name LIKE '%:listen:%' AND query ILIKE 'LISTEN%'",
        );
        return rows.length === workers.length + 1 ? rows.map((row) => row.name).sort() : undefined;
      },
      `the ${workers.length + 1} listeners to LISTEN on ${injected.to}`,
      SETTLE_MS,
      200,
    );

    const window = { from: injected.countFrom, to: loadStoppedAt };
    const report = await settle(env, workers, fault.scenario, cluster.options.synchronous, injected, window, load.acknowledgedAt, startedAt);
    console.log(`failover ${JSON.stringify(report)}`);
    expect({ reconnected, listeners: listeners.length }).toEqual({ reconnected: true, listeners: workers.length + 1 });
    for (const w of workers) {
      expect(w.exitCode()).toBeUndefined();
      expect(w.count('ready')).toBe(1);
    }
    await Promise.all(workers.map((w) => w.stop(60_000)));
    return report;
  } finally {
    wakeStates.stop();
  }
}

/** The figures and the checks of a case once every acknowledged task has succeeded. */
async function settle(
  env: FaultEnvironment,
  workers: ChildWorker[],
  scenario: string,
  synchronous: boolean,
  injected: { from: string; to: string },
  /** From the fault to the end of the load: pauses are measured there (after it, the backlog drains and runs dry). */
  window: { from: number; to: number },
  acknowledgedAt: number[],
  startedAt: number,
): Promise<FailoverReport> {
  const invariants = await env.invariants();
  const tasks = new Map((await allTasks(env.store)).map((task) => [task.id, task]));
  const outcomes = workers.flatMap((w) => w.events.filter((e) => e.event === 'completed'));
  const lostOutcomes = outcomes.filter((e) => {
    const task = tasks.get(e.id!);
    return task?.status !== 'SUCCESS' || task.attemptCount !== e.attempt;
  });
  const inWindow = (at: number) => at >= window.from && at <= window.to;
  const pause = longestPause(window.from, outcomes.map((e) => e.at!).filter(inWindow));
  const workerErrors: Record<string, number> = {};
  for (const e of workers.flatMap((w) => w.events.filter((x) => x.event === 'error' && (x.at ?? 0) >= startedAt))) {
    const key = `${e.operation}: ${errorWords(e.message ?? '')}`;
    workerErrors[key] = (workerErrors[key] ?? 0) + 1;
  }
  const report: FailoverReport = {
    scenario,
    synchronous,
    from: injected.from,
    to: injected.to,
    acknowledgedSubmits: env.acknowledged.length,
    lostSubmits: env.acknowledged.filter((id) => !tasks.has(id)).length,
    acknowledgedOutcomes: outcomes.length,
    lostOutcomes: lostOutcomes.length,
    duplicateExecutions: (await env.target.tables.repeatedExecutions()).length,
    rerunTasks: invariants.figures.repeatedEffects,
    secondsUntilTasksFlow: seconds(pause.end - window.from),
    longestCompletionPauseSeconds: seconds(pause.length),
    longestSubmitPauseSeconds: seconds(longestPause(window.from, acknowledgedAt.filter(inWindow)).length),
    leasesLost: workers.reduce((sum, w) => sum + w.events.filter((e) => e.event === 'leaseLost' && (e.at ?? 0) >= startedAt).length, 0),
    workerErrors,
    violations: invariants.violations,
    knownGaps: invariants.knownGaps,
  };
  if (lostOutcomes.length > 0) report.violations.push(`lost outcomes, e.g. ${JSON.stringify(lostOutcomes.slice(0, 3))}`);
  // A (task, attempt) started twice: what the store and the workers say of it.
  for (const { taskId, attempt, runs } of (await env.target.tables.repeatedExecutions()).slice(0, 3)) {
    const attempts = (await env.store.listAttempts({ taskId })).map((a) => [a.attempt, a.workerId, a.outcome, a.startedAt, a.finishedAt]);
    const said = workers.flatMap((w) =>
      w.events.filter((e) => e.id === taskId).map((e) => `${new Date(e.at!).toISOString()} ${w.config.label} ${e.event} ${e.attempt ?? ''} ${e.reason ?? ''}`),
    );
    console.log(
      `failover duplicate ${scenario}: ${taskId} attempt ${attempt} started ${runs}×; attempts ${JSON.stringify(attempts)}\n${said.sort().join('\n')}`,
    );
  }
  return report;
}

/** What a synchronous failover must show: nothing acknowledged lost, nothing run twice, the invariants. */
export function expectNothingLost(report: FailoverReport): void {
  expect(report).toMatchObject({ lostSubmits: 0, lostOutcomes: 0, duplicateExecutions: 0, violations: [] });
}

/** The longest gap between `from` and the times after it (sorted here), and when it ended. */
function longestPause(from: number, times: number[]): { length: number; end: number } {
  let best = { length: 0, end: from };
  let previous = from;
  for (const at of [...times].sort((a, b) => a - b)) {
    if (at - previous > best.length) best = { length: at - previous, end: at };
    previous = at;
  }
  return best;
}

function seconds(ms: number): number {
  return Math.round(ms / 100) / 10;
}

/** An error message without its ids and numbers: `[SQLSTATE 25006]`, the driver's words. */
function errorWords(message: string): string {
  const state = /SQLSTATE (\w{5})/.exec(message)?.[1];
  const text = message.replace(/^PostgreSQL (error|unreachable) while [^:]*: /, '').slice(0, 70);
  return state ? `${state} ${text}` : text;
}

/** The parent store's wake-up states as they change (PostgresStore.wakeups), sampled every 20 ms. */
function watchWakeups(store: PostgresStore): { seen: string[]; stop(): void } {
  const seen: string[] = [];
  const off = store.subscribe(() => undefined); // the listener opens on the first subscribe
  const timer = setInterval(() => {
    const state = store.wakeups;
    if (seen[seen.length - 1] !== state) seen.push(state);
  }, 20);
  return {
    seen,
    stop() {
      clearInterval(timer);
      off();
    },
  };
}

/**
 * describe() on a Patroni cluster of the file's own (patroni.ts) and a fault environment on it through HAProxy:
 * started before the file's tests, destroyed after them; after each test, the children killed, the cluster healthy
 * again and the tables emptied. Without the programs: fails on CI, else skipped with one line saying how to install them.
 */
export async function describeOnPatroni(
  file: string,
  title: string,
  options: PatroniOptions,
  body: (env: () => FaultEnvironment, cluster: () => PatroniCluster) => void,
): Promise<void> {
  const binaries = patroniTools(file);
  const tools = binaries === null ? null : await clusterTools();
  if (binaries !== null && tools === null && process.env.CI === 'true')
    throw new Error('the Patroni failover tests need initdb on PATH (and, as root, a postgres OS user)');
  if (binaries === null || tools === null) {
    skipNotInstalled(title, 'patroni, etcd-server, haproxy and initdb');
    return;
  }
  describe(title, () => {
    let cluster: PatroniCluster | undefined;
    let env: FaultEnvironment | undefined;
    beforeAll(async () => {
      cluster = await PatroniCluster.start(tools, binaries, options);
      const target = await postgresTargetAt(cluster.url, { remove: () => cluster!.destroy() }).catch(async (error: unknown) => {
        await cluster!.destroy();
        throw error;
      });
      env = await FaultEnvironment.on(target);
    }, 300_000);
    afterEach(async () => {
      await killAllChildren();
      await cluster?.healthy();
      await env?.reset();
    }, 300_000);
    afterAll(async () => {
      await killAllChildren();
      if (env) await env.close();
      else await cluster?.destroy();
    }, 120_000);
    body(
      () => env!,
      () => cluster!,
    );
  });
}
