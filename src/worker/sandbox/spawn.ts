/**
 * Starts a sandboxed handler's thread: thread.js next to this module, with
 * the type's resource limits. Where TypeScript must be loaded — this code
 * runs from its sources (tests, `node --import tsx`), or the handler's module
 * is a .ts file — the thread starts through tsx's tsImport: a Worker does not
 * inherit its parent's loader hooks, and `--import tsx` in a Worker's
 * execArgv does not reach its entry on Node 20.
 */
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Worker, type ResourceLimits } from 'node:worker_threads';
import { ErrorCode, SandboxError } from '../../core/errors.js';
import type { SandboxOptions } from '../../core/sandbox.js';
import type { ThreadData } from './protocol.js';

const OWN_EXTENSION = /\.[cm]?ts$/.test(fileURLToPath(import.meta.url)) ? '.ts' : '.js';
const ENTRY = new URL(`./thread${OWN_EXTENSION}`, import.meta.url);
const TYPESCRIPT = /\.[cm]?tsx?$/;

export function spawnThread(data: ThreadData, options: SandboxOptions): Worker {
  const resourceLimits: ResourceLimits = {};
  if (options.maxOldGenerationSizeMb !== undefined) resourceLimits.maxOldGenerationSizeMb = options.maxOldGenerationSizeMb;
  if (options.maxYoungGenerationSizeMb !== undefined) resourceLimits.maxYoungGenerationSizeMb = options.maxYoungGenerationSizeMb;
  if (options.stackSizeMb !== undefined) resourceLimits.stackSizeMb = options.stackSizeMb;
  const settings = { workerData: data, resourceLimits };
  if (OWN_EXTENSION === '.js' && !TYPESCRIPT.test(new URL(data.moduleUrl).pathname)) return new Worker(ENTRY, settings);
  return new Worker(tsxBootstrap(), { ...settings, eval: true });
}

let bootstrap: string | null = null;

/** A CommonJS script (what `eval` runs) that imports the entry through tsx. */
function tsxBootstrap(): string {
  if (bootstrap !== null) return bootstrap;
  let api: string;
  try {
    // The package's ESM entry by path: its CommonJS one loses its way to the ESM half from inside a Worker.
    api = pathToFileURL(join(dirname(createRequire(import.meta.url).resolve('tsx/package.json')), 'dist/esm/api/index.mjs')).href;
  } catch (error) {
    throw new SandboxError(ErrorCode.SANDBOX_MODULE_INVALID, 'a TypeScript sandbox module needs the tsx package: npm install tsx', {
      retryable: true,
      cause: error,
    });
  }
  bootstrap = `import(${JSON.stringify(api)}).then(({ tsImport }) => tsImport(${JSON.stringify(ENTRY.href)}, ${JSON.stringify(import.meta.url)}));`;
  return bootstrap;
}
