import type { WorkerOptions } from '../../src/worker/options.js';

/**
 * Worker timings for the shared suites: fast polls, heartbeats and retries;
 * 5 s leases (a loaded 2-core machine can stall a heartbeat for seconds);
 * limits high enough that they never bind unless a test sets them; silent.
 */
export const FAST_WORKER: Partial<WorkerOptions> = {
  pollIntervalMs: 20,
  heartbeatIntervalMs: 100,
  leaseMs: 5000,
  recoveryIntervalMs: 100,
  cancelCheckIntervalMs: 0,
  retry: { baseDelayMs: 10, maxDelayMs: 50, jitter: 0 },
  shutdownGraceMs: 2000,
  shutdownAbortWaitMs: 1000,
  globalConcurrency: 1000,
  typeConcurrency: 1000,
  logger: false,
};
