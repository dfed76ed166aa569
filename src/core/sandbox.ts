/**
 * A sandboxed handler (issue 27, part 5): a task type whose handler runs in a
 * worker thread of its own with a memory limit (worker/sandbox/). A function
 * cannot cross to another thread, so the handler is named by its module; the
 * definition in the worker's thread keeps everything else (schema, validate,
 * validateCompletion, retry, timeoutMs). Checked by defineTask.
 */
import { isAbsolute } from 'node:path';
import { pathToFileURL } from 'node:url';
import { ValidationError } from './errors.js';
import { checkKnownKeys, keysOf } from './validate.js';

export interface SandboxOptions {
  /**
   * The module that exports the handler, `(ctx, payload) => result` like `execute`: an absolute path, or a
   * `file:` URL (`new URL('./resize.js', import.meta.url)`). A `.ts` module needs the `tsx` package installed.
   */
  readonly module: string | URL;
  /** The export that is the handler; default `default`. */
  readonly exportName?: string;
  /** The thread's old-generation heap limit (Worker resourceLimits); past it the attempt fails SANDBOX_OUT_OF_MEMORY. Default: Node's. */
  readonly maxOldGenerationSizeMb?: number;
  /** The thread's young-generation (semi-space) limit. Default: Node's. */
  readonly maxYoungGenerationSizeMb?: number;
  /** The thread's stack size. Default: Node's (4 MB). */
  readonly stackSizeMb?: number;
  /** How long a warm thread waits for the next task of its type before it is ended. Default 30,000 ms. */
  readonly idleTimeoutMs?: number;
  /** After an abort (timeout, cancel, lost lease, shutdown) the handler may wind down this long before its thread is terminated. Default 1,000 ms. */
  readonly terminateGraceMs?: number;
}

export const SANDBOX_DEFAULTS = { exportName: 'default', idleTimeoutMs: 30_000, terminateGraceMs: 1000 } as const;

const SANDBOX_KEYS = keysOf<SandboxOptions>({
  module: true,
  exportName: true,
  maxOldGenerationSizeMb: true,
  maxYoungGenerationSizeMb: true,
  stackSizeMb: true,
  idleTimeoutMs: true,
  terminateGraceMs: true,
});

/** A definition's sandbox: a module and positive limits, and no execute or executeBatch beside it (the module is the handler). */
export function checkSandboxDefinition(type: string, definition: { execute?: unknown; executeBatch?: unknown; sandbox?: SandboxOptions }): void {
  const { sandbox } = definition;
  if (sandbox === undefined) return;
  if (typeof sandbox !== 'object' || sandbox === null) throw new ValidationError(`task ${type}: sandbox must be an object`, 'sandbox');
  checkKnownKeys(`defineTask(${type})`, sandbox, SANDBOX_KEYS, 'sandbox.');
  if (definition.execute !== undefined || definition.executeBatch !== undefined) {
    throw new ValidationError(`task ${type}: a sandboxed task names its handler by sandbox.module; leave execute and executeBatch out`, 'sandbox');
  }
  moduleUrl(type, sandbox.module);
  if (sandbox.exportName !== undefined && (typeof sandbox.exportName !== 'string' || sandbox.exportName.length === 0)) {
    throw new ValidationError(`task ${type}: sandbox.exportName must be a non-empty string`, 'sandbox.exportName');
  }
  for (const key of ['maxOldGenerationSizeMb', 'maxYoungGenerationSizeMb', 'stackSizeMb', 'idleTimeoutMs', 'terminateGraceMs'] as const) {
    const value = sandbox[key];
    if (value !== undefined && (typeof value !== 'number' || !Number.isFinite(value) || value < (key === 'terminateGraceMs' ? 0 : 1))) {
      throw new ValidationError(`task ${type}: sandbox.${key} must be a ${key === 'terminateGraceMs' ? 'non-negative' : 'positive'} number`, `sandbox.${key}`);
    }
  }
}

/** The handler module as a file: URL (what the thread imports). */
export function moduleUrl(type: string, module: string | URL): string {
  if (module instanceof URL) {
    if (module.protocol !== 'file:') throw new ValidationError(`task ${type}: sandbox.module must be a file: URL or an absolute path`, 'sandbox.module');
    return module.href;
  }
  if (typeof module === 'string' && module.startsWith('file:')) return new URL(module).href;
  if (typeof module !== 'string' || !isAbsolute(module)) {
    throw new ValidationError(
      `task ${type}: sandbox.module must be an absolute path or a file: URL (relative paths depend on the working directory)`,
      'sandbox.module',
    );
  }
  return pathToFileURL(module).href;
}
