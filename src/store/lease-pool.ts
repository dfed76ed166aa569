/**
 * The lease pool every server store keeps beside its main pool (DESIGN §3:
 * heartbeats and outcome writes never wait behind handler work for a
 * connection). Its size rule is shared by the dialects that have one.
 */
import { InvalidOptionsError } from '../core/errors.js';
import { checkInteger } from '../core/validate.js';

/**
 * One connection for heartbeats and lease checks, one for outcome writes:
 * with one, a heartbeat could queue behind an outcome write waiting on a row
 * lock, and a lease would be given up for nothing.
 */
export const MIN_LEASE_POOL_SIZE = 2;
const MAX_LEASE_POOL_SIZE = 100;

/** Rejects a lease pool the worker cannot live with, naming the fix. */
export function checkLeasePoolSize(component: string, size: unknown): asserts size is number {
  if (typeof size === 'number' && Number.isInteger(size) && size < MIN_LEASE_POOL_SIZE) {
    throw new InvalidOptionsError(
      component,
      'leasePoolSize',
      `is ${size}, but a worker needs ${MIN_LEASE_POOL_SIZE} connections no handler can take (one for heartbeats, one for outcome writes): ` +
        `give leasePoolSize ≥ ${MIN_LEASE_POOL_SIZE} or leave it out`,
    );
  }
  checkInteger(component, 'leasePoolSize', size, { min: MIN_LEASE_POOL_SIZE, max: MAX_LEASE_POOL_SIZE });
}

/**
 * A lease pool of yours (option `leasePool`): it must be a pool of its own
 * (handlers take connections from the main one) with room for a worker.
 * `size` is its connection limit as the driver reports it.
 */
export function checkOwnLeasePool(component: string, leasePool: object, mainPool: unknown, size: number, sizeOption: string): void {
  if (leasePool === mainPool) {
    throw new InvalidOptionsError(
      component,
      'leasePool',
      'is the same pool as `pool`: handlers could take every connection of it; give a separate pool, or leave leasePool out (the store opens one)',
    );
  }
  if (size < MIN_LEASE_POOL_SIZE) {
    throw new InvalidOptionsError(
      component,
      'leasePool',
      `allows ${size} connection(s), but a worker needs ${MIN_LEASE_POOL_SIZE} (one for heartbeats, one for outcome writes): ` +
        `create it with ${sizeOption} ≥ ${MIN_LEASE_POOL_SIZE}, or leave leasePool out (the store opens one)`,
    );
  }
}
