/**
 * One fault-test file's world: its own PostgreSQL cluster (cluster.ts), a
 * migrated schema with the handlers' tables, the parent's store, the worker
 * processes it forks (fault-child.ts through test/process/harness.ts), and
 * the tasks it acknowledged — what the invariants are checked against.
 * FAULTS.md's short timings: 2 s lease, 0.5 s heartbeat, 1 s sweep.
 */
import { join } from 'node:path';
import { uuidv7 } from '../../src/core/ids.js';
import type { NewTask } from '../../src/core/task.js';
import { PostgresStore, type PostgresTransaction } from '../../src/store/postgres/store.js';
import { ChildWorker } from '../process/harness.js';
import type { TestCluster } from './cluster.js';
import type { FaultChildConfig, FaultPayload } from './fault-child.js';
import { checkInvariants, handlerTablesSql, type InvariantReport } from './invariants.js';

export const TIMING = { leaseMs: 2000, heartbeatIntervalMs: 500, recoveryIntervalMs: 1000, pollIntervalMs: 100 } as const;
/** Limits well above what the cases run, so that no case waits on the default per-type limit (5). */
const LIMITS = { globalConcurrency: 1000, typeConcurrency: 1000 } as const;
const SCHEMA = 'faults';

export class FaultEnvironment {
  readonly acknowledged: string[] = [];
  readonly store: PostgresStore;

  private constructor(readonly cluster: TestCluster) {
    this.store = new PostgresStore({ connectionString: cluster.url, schema: SCHEMA, poolSize: 4, applicationName: 'tl-parent' });
  }

  static async open(cluster: TestCluster): Promise<FaultEnvironment> {
    const env = new FaultEnvironment(cluster);
    await env.store.migrate();
    await cluster.query(handlerTablesSql(SCHEMA));
    return env;
  }

  get schema(): string {
    return SCHEMA;
  }

  /** A worker process on the test cluster with the suite's timings (overridable). */
  worker(label: string, types: string[], worker: FaultChildConfig['worker'] = {}, poolSize = 4): ChildWorker {
    const config: FaultChildConfig = { label, url: this.cluster.url, schema: SCHEMA, types, poolSize, worker: { ...TIMING, ...LIMITS, ...worker } };
    return new ChildWorker(config, join(import.meta.dirname, 'fault-child.ts'));
  }

  /** Submits one task per payload; their ids count as acknowledged once the insert returned. */
  async submit(type: string, payloads: FaultPayload[], options: { maxAttempts?: number; transaction?: PostgresTransaction } = {}): Promise<string[]> {
    const tasks = payloads.map((payload) => newTask(type, payload, options.maxAttempts ?? 5));
    for (let i = 0; i < tasks.length; i += 2000) await this.store.insertTasks({ tasks: tasks.slice(i, i + 2000), transaction: options.transaction });
    const ids = tasks.map((task) => task.id);
    if (options.transaction === undefined) this.acknowledged.push(...ids);
    return ids;
  }

  async statusOf(id: string): Promise<string | undefined> {
    return (await this.cluster.query<{ status: string }>(`SELECT status FROM "${SCHEMA}".system_async_task WHERE id = $1`, [id]))[0]?.status;
  }

  async countStatus(status: string): Promise<number> {
    return Number((await this.cluster.query<{ n: string }>(`SELECT count(*) AS n FROM "${SCHEMA}".system_async_task WHERE status = $1`, [status]))[0]!.n);
  }

  /**
   * Acknowledged tasks in `status`. Not countStatus: a batch whose insert committed but whose reply was lost
   * (a crash mid-commit) is in the table without having been acknowledged.
   */
  async countAcknowledged(status: string): Promise<number> {
    const rows = await this.cluster.query<{ n: string }>(`SELECT count(*) AS n FROM "${SCHEMA}".system_async_task WHERE status = $1 AND id = ANY($2)`, [
      status,
      this.acknowledged,
    ]);
    return Number(rows[0]!.n);
  }

  /** Rows the handlers logged when they started (of one worker, or all). */
  async executions(worker?: string): Promise<number> {
    const rows = await this.cluster.query<{ n: string }>(`SELECT count(*) AS n FROM "${SCHEMA}".executions WHERE $1::text IS NULL OR worker = $1`, [
      worker ?? null,
    ]);
    return Number(rows[0]!.n);
  }

  async attempts(id: string): Promise<{ attempt: number; worker_id: string; outcome: string | null }[]> {
    return this.cluster.query(`SELECT attempt, worker_id, outcome FROM "${SCHEMA}".system_async_task_attempt WHERE task_id = $1 ORDER BY attempt`, [id]);
  }

  /** I1, I2, I4, I5 over every task acknowledged since the last reset. */
  invariants(): Promise<InvariantReport> {
    return checkInvariants((sql, values) => this.cluster.query(sql, values), SCHEMA, this.acknowledged, TIMING);
  }

  async reset(): Promise<void> {
    this.acknowledged.length = 0;
    await this.cluster.query(`TRUNCATE "${SCHEMA}".system_async_task, "${SCHEMA}".system_async_task_attempt, "${SCHEMA}".system_async_task_failure,
      "${SCHEMA}".system_async_task_dead_letter, "${SCHEMA}".system_async_task_worker, "${SCHEMA}".executions, "${SCHEMA}".effects`);
  }

  async close(): Promise<void> {
    await this.store.close().catch(() => undefined);
  }
}

export function newTask(type: string, payload: FaultPayload, maxAttempts: number): NewTask {
  return {
    id: uuidv7(),
    taskType: type,
    payloadJson: JSON.stringify(payload),
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
