/**
 * Task modules given by path (`tasklease worker ./tasks.js`): each exports
 * task definitions made with defineTask — a default export (one definition or
 * an array) and/or named exports; a worker also takes the periodic tasks of
 * a named export `schedules`, and middleware (client/middleware.ts: payload
 * encryption, an owner stamp…) from a named export `middleware`, which
 * submits from the CLI use too. Anything else a module exports is ignored.
 */
import type { Middleware } from '../client/middleware.js';
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { defineTask, type AnyTaskDefinition } from '../core/definition.js';
import type { ScheduleInput } from '../core/schedule.js';
import { UsageError } from './exit-codes.js';

/**
 * The definitions, the periodic tasks the modules declare as a named export `schedules` (an array; the worker
 * validates each) and their middleware (a named export `middleware`, an array; in module order).
 */
export async function loadWorkerModules(
  paths: readonly string[],
  cwd: string,
): Promise<{ tasks: AnyTaskDefinition[]; schedules: ScheduleInput[]; middleware: Middleware[] }> {
  const byType = new Map<string, { definition: AnyTaskDefinition; from: string }>();
  const schedules: ScheduleInput[] = [];
  const middleware: Middleware[] = [];
  for (const path of paths) {
    const absolute = resolve(cwd, path);
    if (!existsSync(absolute)) throw new UsageError(`task module ${path} does not exist (resolved to ${absolute})`, 'modules');
    const exports = await importModule(absolute, path);
    if (exports.schedules !== undefined) {
      if (!Array.isArray(exports.schedules)) throw new UsageError(`task module ${path}: the export "schedules" must be an array of schedules`, 'modules');
      schedules.push(...(exports.schedules as ScheduleInput[]));
    }
    if (exports.middleware !== undefined) {
      if (!Array.isArray(exports.middleware)) throw new UsageError(`task module ${path}: the export "middleware" must be an array of middleware`, 'modules');
      middleware.push(...(exports.middleware as Middleware[]));
    }
    const found = definitionsIn(exports);
    if (found.length === 0) {
      throw new UsageError(
        `task module ${path} exports no task definitions: export defineTask({ type, execute }) results, as named exports or a default array`,
        'modules',
      );
    }
    for (const definition of found) {
      const seen = byType.get(definition.type);
      // The same definition exported twice (named and in the default array) is one task.
      if (seen && seen.definition !== definition) throw new UsageError(`task type ${definition.type} is defined twice (${seen.from} and ${path})`, 'modules');
      byType.set(definition.type, { definition, from: path });
    }
  }
  return { tasks: [...byType.values()].map(({ definition }) => definition), schedules, middleware };
}

async function importModule(absolute: string, path: string): Promise<Record<string, unknown>> {
  try {
    return (await import(pathToFileURL(absolute).href)) as Record<string, unknown>;
  } catch (error) {
    throw new UsageError(`task module ${path} failed to load: ${(error as Error).message}`, 'modules');
  }
}

function definitionsIn(exports: Record<string, unknown>): AnyTaskDefinition[] {
  const candidates = Object.entries(exports).flatMap(([name, value]) => (name === 'default' && Array.isArray(value) ? value : [value]));
  const unique = [...new Set(candidates.filter(looksLikeDefinition))];
  return unique.map((value) => (Object.isFrozen(value) ? value : defineTask(value)));
}

/** A definition has a string `type` and an `execute` (or `executeBatch`) function, a sandbox, or a schema (a producer's module); defineTask checks the rest. */
function looksLikeDefinition(value: unknown): value is AnyTaskDefinition {
  if (typeof value !== 'object' || value === null) return false;
  const candidate = value as { type?: unknown; execute?: unknown; executeBatch?: unknown; schema?: unknown; sandbox?: unknown };
  const runs = typeof candidate.execute === 'function' || typeof candidate.executeBatch === 'function' || typeof candidate.sandbox === 'object';
  return typeof candidate.type === 'string' && (runs || typeof candidate.schema === 'object');
}
