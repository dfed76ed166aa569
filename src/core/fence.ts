/**
 * Fencing tokens for systems outside the task store (ctx.fence, worker/fence.ts):
 * what travels with a write to another system and what that system checks.
 *
 * A fence is a whole number ≥ 1 that strictly grows with every lease of a task
 * that handed one out. The receiving side keeps, per task id (or per resource
 * the tasks write), the highest fence it accepted, and accepts a write only
 * with a greater one — or an equal one, when a single attempt writes the same
 * resource more than once (`allowEqual`). Its check and its write must be
 * one atomic step there: a conditional write in its database, a compare-and-set
 * on an object's version. The README ("Fencing tokens for outside systems")
 * shows the three patterns: a conditional write in another PostgreSQL/MySQL
 * database, an HTTP call carrying the header, an object-store write with a
 * precondition.
 */
import { FenceError } from './errors.js';

/** The HTTP header a handler sends its fence in, and a receiver reads it from (`<task id, URI-encoded>:<fence>`). */
export const FENCE_HEADER = 'Tasklease-Fence';

/** A fence as it travels: the task (or resource) it is about and its number. */
export interface Fence {
  taskId: string;
  fence: number;
}

/** Throws FENCE_INVALID unless `fence` is a whole number ≥ 1 (what ctx.fence hands out). */
export function checkFence(fence: unknown): number {
  if (typeof fence !== 'number' || !Number.isSafeInteger(fence) || fence < 1) {
    throw new FenceError('FENCE_INVALID', `a fence is a whole number ≥ 1 (ctx.fence()), not ${JSON.stringify(fence) ?? String(fence)}`);
  }
  return fence;
}

/** The value of the Tasklease-Fence header for this task and fence. */
export function fenceHeader(taskId: string, fence: number): string {
  if (typeof taskId !== 'string' || taskId.length === 0) throw new FenceError('FENCE_INVALID', 'a fence header needs the task id');
  return `${encodeURIComponent(taskId)}:${checkFence(fence)}`;
}

/** Reads a Tasklease-Fence header's value (as node:http gives it: a string, or an array when sent twice); throws FENCE_INVALID. */
export function parseFenceHeader(value: string | readonly string[] | null | undefined): Fence {
  if (Array.isArray(value)) {
    if (value.length !== 1) throw new FenceError('FENCE_INVALID', `expected one ${FENCE_HEADER} header, got ${value.length}`);
    return parseFenceHeader(value[0]);
  }
  const text = typeof value === 'string' ? value.trim() : '';
  const colon = text.lastIndexOf(':');
  const number = text.slice(colon + 1);
  if (colon <= 0 || !/^[1-9][0-9]{0,15}$/.test(number)) {
    throw new FenceError('FENCE_INVALID', `the ${FENCE_HEADER} header must read <task id>:<fence>, not ${JSON.stringify(String(value ?? ''))}`);
  }
  let taskId: string;
  try {
    taskId = decodeURIComponent(text.slice(0, colon));
  } catch {
    throw new FenceError('FENCE_INVALID', `the ${FENCE_HEADER} header's task id is not URI-encoded text`);
  }
  return { taskId, fence: checkFence(Number(number)) };
}

/**
 * The receiving side's check, in memory: admits a fence for a key (a task id
 * or a resource key) only when it is greater than every fence admitted for
 * that key before. For tests, examples and a receiver whose state lives in
 * one process anyway; it forgets on restart — a receiver that must not
 * keeps the last fence where it keeps its data, and checks it in the same
 * write (the README's conditional write).
 */
export class FenceGate {
  private readonly seen = new Map<string, number>();

  /** `allowEqual`: the same fence may come again (one attempt writing the same resource more than once). */
  constructor(private readonly options: { allowEqual?: boolean } = {}) {}

  /** Admits and records `fence` for `key`, or answers false (and records nothing) when it is not newer. */
  admit(key: string, fence: number): boolean {
    checkFence(fence);
    const last = this.seen.get(key);
    if (last !== undefined && (fence < last || (fence === last && !this.options.allowEqual))) return false;
    this.seen.set(key, fence);
    return true;
  }

  /** admit, or throw FENCE_STALE (with the last fence admitted) — for a receiver that answers an error, e.g. HTTP 409. */
  check(key: string, fence: number): void {
    if (!this.admit(key, fence)) {
      const last = this.seen.get(key)!;
      throw new FenceError('FENCE_STALE', `fence ${fence} for ${JSON.stringify(key)} is stale: ${last} was accepted already`, last);
    }
  }

  /** The last fence admitted for `key` (undefined: none yet). */
  last(key: string): number | undefined {
    return this.seen.get(key);
  }
}

/**
 * An object store with conditional writes (S3 and GCS: If-Match / If-None-Match
 * on a PUT; Azure Blob alike), reduced to what a fenced write needs. The
 * object's fence lives in its metadata (e.g. `x-amz-meta-fence`).
 */
export interface ConditionalObjectStore<Body> {
  /** The object's fence (null: written without one) and its version tag (ETag); null when there is no object. */
  head(key: string): Promise<{ fence: number | null; etag: string } | null>;
  /**
   * Writes `body` with `fence` in its metadata, only if the object is still at `ifMatch` (an ETag: If-Match), or
   * absent when `ifMatch` is null (If-None-Match: *). false when that precondition failed (HTTP 412).
   */
  put(key: string, body: Body, fence: number, ifMatch: string | null): Promise<boolean>;
}

/**
 * A compare-and-set write of an object under a fence: read the object's fence
 * and version, give up ('stale') when the object holds a fence as new as
 * ours, else write on the condition that it is still that version. A failed
 * condition means another writer came in between: read again and decide
 * again (each such round is a write that landed, with a greater fence than
 * the object had, so the rounds end).
 */
export async function writeFencedObject<Body>(store: ConditionalObjectStore<Body>, key: string, fence: number, body: Body): Promise<'written' | 'stale'> {
  checkFence(fence);
  for (;;) {
    const current = await store.head(key);
    if (current !== null && current.fence !== null && current.fence >= fence) return 'stale';
    if (await store.put(key, body, fence, current?.etag ?? null)) return 'written';
  }
}
