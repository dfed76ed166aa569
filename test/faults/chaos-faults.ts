/**
 * The faults the chaos run draws from (the cases of the fault suite, made
 * one-shot): each takes the run's world and leaves it healthy again, except
 * for dead workers, which the run's supervisor restarts.
 */
import type { ChildWorker } from '../process/harness.js';
import type { TestCluster } from './cluster.js';

export interface ChaosWorld {
  cluster: TestCluster;
  workers: ChildWorker[];
  random: () => number;
  leaseMs: number;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const alive = (world: ChaosWorld): ChildWorker[] => world.workers.filter((w) => w.exitCode() === undefined);

function pick(world: ChaosWorld): ChildWorker | null {
  const candidates = alive(world);
  return candidates.length === 0 ? null : candidates[Math.floor(world.random() * candidates.length)]!;
}

/** Between `min` and `max` leases, drawn from the run's random source. */
const leases = (world: ChaosWorld, min: number, max: number) => Math.floor(world.leaseMs * (min + world.random() * (max - min)));

export const FAULT_ACTIONS = {
  /** FAULTS.md 1: a worker killed mid-task. */
  async killWorker(world: ChaosWorld) {
    pick(world)?.signal('SIGKILL');
  },
  /** 3: a zombie, frozen past its lease, then continued. */
  async freezeWorker(world: ChaosWorld) {
    const worker = pick(world);
    if (!worker) return;
    worker.signal('SIGSTOP');
    await sleep(leases(world, 0.5, 3));
    worker.signal('SIGCONT');
  },
  /** 14: a graceful stop (the supervisor restarts it). */
  async stopWorker(world: ChaosWorld) {
    pick(world)?.signal('SIGTERM');
  },
  /** 14: SIGTERM ×5, then SIGKILL during the grace period. */
  async impatientStop(world: ChaosWorld) {
    const worker = pick(world);
    if (!worker) return;
    for (let i = 0; i < 5; i += 1) worker.signal('SIGTERM');
    await sleep(world.random() * 1000);
    if (worker.exitCode() === undefined) worker.signal('SIGKILL');
  },
  /** 9 and B1: the whole database frozen for 1–4 leases. */
  async freezeDatabase(world: ChaosWorld) {
    const pids = await world.cluster.freeze();
    try {
      await sleep(leases(world, 1, 4));
    } finally {
      world.cluster.thaw(pids);
    }
  },
  /** 8: crash (no checkpoint) and restart after up to a lease. */
  async crashDatabase(world: ChaosWorld) {
    await world.cluster.crash();
    await sleep(leases(world, 0, 1));
    await world.cluster.start();
  },
  /** 9: read-only failover for 1–3 leases. */
  async readOnly(world: ChaosWorld) {
    await world.cluster.setReadOnly(true);
    try {
      await sleep(leases(world, 1, 3));
    } finally {
      await world.cluster.setReadOnly(false);
    }
  },
  /** 7: every worker connection terminated. */
  async killConnections(world: ChaosWorld) {
    await world.cluster.terminate('tlw-');
  },
} satisfies Record<string, (world: ChaosWorld) => Promise<void>>;

export type FaultName = keyof typeof FAULT_ACTIONS;
export const FAULTS = Object.keys(FAULT_ACTIONS) as FaultName[];
