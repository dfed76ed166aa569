/**
 * One fault-test file's world on one store (targets.ts): the parent's store,
 * the handlers' tables, the worker processes it forks (fault-child.ts
 * through test/process/harness.ts), and the tasks it acknowledged — what the
 * invariants are checked against. FAULTS.md's short timings: 2 s lease,
 * 0.5 s heartbeat, 1 s sweep.
 */
import { join } from 'node:path';
import { uuidv7 } from '../../src/core/ids.js';
import { createClient } from '../../src/client/client.js';
import { defineTask } from '../../src/core/definition.js';
import { Scope } from '../../src/core/scope.js';
import type { AttemptRecord } from '../../src/store/types.js';
import type { NewTask } from '../../src/core/task.js';
import type { TaskStatus } from '../../src/core/status.js';
import { ChildWorker } from '../process/harness.js';
import { waitFor } from '../helpers/wait.js';
import type { DatabaseServer, TestCluster } from './cluster.js';
import type { FaultChildConfig, FaultPayload } from './fault-child.js';
import { allTasks, checkInvariants, type InvariantReport } from './invariants.js';
import { PG_SCHEMA, postgresTarget, type FaultDialect, type FaultTarget } from './targets.js';

export const TIMING = { leaseMs: 2000, heartbeatIntervalMs: 500, recoveryIntervalMs: 1000, pollIntervalMs: 100 } as const;
/** Limits well above what the cases run, so that no case waits on the default per-type limit (5). */
const LIMITS = { globalConcurrency: 1000, typeConcurrency: 1000 } as const;
const G = Scope.global();

export interface WorkerExtras {
  poolSize?: number;
  connectTimeoutMs?: number;
  clockSkewMs?: number;
  /** Of the worker's types, those that check their payload's shape at run time (fault-payload.ts). */
  strictTypes?: string[];
  /** Of the worker's types, those run by a batch handler (fault-child.ts). */
  batchTypes?: string[];
  /** Of the worker's types, those run in a sandbox (fault-child.ts, sandbox-handler.ts), with these options and timeout. */
  sandboxTypes?: string[];
  sandbox?: FaultChildConfig['sandbox'];
  sandboxTimeoutMs?: number;
  /** The store's server at another address (a proxy in front of it: black-hole.ts); the handler tables stay direct. */
  storeUrl?: string;
}

export class FaultEnvironment {
  readonly acknowledged: string[] = [];

  private constructor(readonly target: FaultTarget) {}

  static async on(target: FaultTarget): Promise<FaultEnvironment> {
    return new FaultEnvironment(target);
  }

  /** On a PostgreSQL cluster the caller owns and destroys (the chaos run). */
  static async open(cluster: TestCluster): Promise<FaultEnvironment> {
    return new FaultEnvironment(await postgresTarget(cluster));
  }

  get dialect(): FaultDialect {
    return this.target.dialect;
  }

  get store(): FaultTarget['store'] {
    return this.target.store;
  }

  /** The schema of the tables on the PostgreSQL cluster (diagnostic queries of the database cases). */
  get schema(): string {
    return PG_SCHEMA;
  }

  /** The database server of its own under this environment (the database cases'). */
  get server(): DatabaseServer {
    if (!this.target.server) throw new Error(`no server of our own under this ${this.dialect} environment`);
    return this.target.server;
  }

  /** The PostgreSQL cluster under this environment: only the database cases, which run there alone, ask for it. */
  get cluster(): TestCluster {
    if (!this.target.cluster) throw new Error(`no cluster of our own on ${this.dialect}`);
    return this.target.cluster;
  }

  /**
   * SIGSTOPs `worker` at a moment it holds no write lock of the store's. On SQLite a process stopped inside a write
   * (a heartbeat, a claim, its handler's log) keeps the file's only write lock, and every other process — the
   * sweeper, the rescuer — waits for it: not the zombie the cases are about. Continued and stopped again until it
   * holds none. On the servers a frozen statement is part of the fault, and the stop is plain.
   */
  async freeze(worker: ChildWorker): Promise<void> {
    worker.signal('SIGSTOP');
    const locked = this.target.writeLocked;
    if (!locked) return;
    let stopped = true;
    await waitFor(
      async () => {
        if (!stopped) worker.signal('SIGSTOP');
        stopped = true;
        if (!(await locked())) return true;
        worker.signal('SIGCONT');
        stopped = false;
        return false;
      },
      `${worker.config.label} stopped outside a write of its own`,
      10_000,
      20,
    );
  }

  /** A worker process on this store with the suite's timings (overridable). */
  worker(label: string, types: string[], worker: FaultChildConfig['worker'] = {}, extras: WorkerExtras = {}): ChildWorker {
    const config: FaultChildConfig = {
      label,
      store: {
        ...this.target.childStore,
        ...(extras.storeUrl === undefined ? {} : urlOf(this.target.childStore, extras.storeUrl)),
        poolSize: extras.poolSize,
        connectTimeoutMs: extras.connectTimeoutMs,
      },
      handlerDb: this.target.handlerDb,
      types,
      strictTypes: extras.strictTypes,
      batchTypes: extras.batchTypes,
      sandboxTypes: extras.sandboxTypes,
      sandbox: extras.sandbox,
      sandboxTimeoutMs: extras.sandboxTimeoutMs,
      clockSkewMs: extras.clockSkewMs,
      worker: { ...TIMING, ...LIMITS, ...worker },
    };
    return new ChildWorker(config, join(import.meta.dirname, 'fault-child.ts'));
  }

  /** Submits one task per payload; their ids count as acknowledged once the insert returned. */
  submit(type: string, payloads: FaultPayload[], options: { maxAttempts?: number; transaction?: unknown } = {}): Promise<string[]> {
    return this.submitJson(
      type,
      payloads.map((payload) => JSON.stringify(payload)),
      options,
    );
  }

  /**
   * A flow (client.submitFlow) of fault-child tasks: each node's type, payload and parents (keys). Its ids by key, all
   * acknowledged once the submit returned.
   */
  async submitFlow(nodes: { key: string; type: string; payload: FaultPayload; dependsOn?: string[] }[]): Promise<Record<string, string>> {
    const types = [...new Set(nodes.map((node) => node.type))].map((type) => defineTask({ type }));
    const flow = await createClient({ store: this.store, tasks: types }).submitFlow({ nodes: nodes.map((node) => ({ ...node, maxAttempts: 5 })) });
    const ids = Object.fromEntries(Object.entries(flow.tasks).map(([key, task]) => [key, task.id]));
    this.acknowledged.push(...Object.values(ids));
    return ids;
  }

  /** The same with each payload as the JSON text stored (which need not be valid JSON: the malformed-payload case). */
  async submitJson(type: string, payloads: string[], options: { maxAttempts?: number; transaction?: unknown } = {}): Promise<string[]> {
    const tasks = payloads.map((payloadJson) => newTask(type, payloadJson, options.maxAttempts ?? 5));
    for (let i = 0; i < tasks.length; i += 2000) await this.store.insertTasks({ tasks: tasks.slice(i, i + 2000), transaction: options.transaction });
    const ids = tasks.map((task) => task.id);
    if (options.transaction === undefined) this.acknowledged.push(...ids);
    return ids;
  }

  async statusOf(id: string): Promise<string | undefined> {
    return (await this.store.getTask({ id, scope: G }))?.status;
  }

  async countStatus(status: TaskStatus): Promise<number> {
    return (await this.store.countByStatus({ scope: G }))[status] ?? 0;
  }

  /**
   * Acknowledged tasks in `status`. Not countStatus: a batch whose insert committed but whose reply was lost
   * (a crash mid-commit) is in the table without having been acknowledged.
   */
  async countAcknowledged(status: TaskStatus): Promise<number> {
    const acknowledged = new Set(this.acknowledged);
    return (await allTasks(this.store, [status])).filter((task) => acknowledged.has(task.id)).length;
  }

  /** Rows the handlers logged when they started (of one worker, or all). */
  executions(worker?: string): Promise<number> {
    return this.target.tables.executions(worker);
  }

  async attempts(id: string): Promise<{ attempt: number; worker_id: string; outcome: string | null }[]> {
    const rows: AttemptRecord[] = await this.store.listAttempts({ taskId: id });
    return rows.map((row) => ({ attempt: row.attempt, worker_id: row.workerId, outcome: row.outcome }));
  }

  /** I1, I2, I4, I5 over every task acknowledged since the last reset. */
  invariants(): Promise<InvariantReport> {
    return checkInvariants(this.store, this.target.tables, this.acknowledged, TIMING);
  }

  async reset(): Promise<void> {
    this.acknowledged.length = 0;
    await this.target.tables.reset();
  }

  async close(): Promise<void> {
    await this.target.destroy();
  }
}

/** The same store at `url` (PostgreSQL `url`, MySQL `uri`; SQLite has no address). */
function urlOf(store: FaultTarget['childStore'], url: string): { url: string } | { uri: string } {
  if (store.dialect === 'sqlite') throw new Error('a SQLite store has no address to reach it through');
  return store.dialect === 'postgres' ? { url } : { uri: url };
}

export function newTask(type: string, payloadJson: string, maxAttempts: number): NewTask {
  return {
    id: uuidv7(),
    taskType: type,
    payloadJson,
    priority: 0,
    delayMs: 0,
    availableAt: null,
    deadlineAt: null,
    maxAttempts,
    owner: null,
    idempotencyKey: null,
    traceId: null,
  };
}
