/**
 * Task modules given by path (`tasklease worker ./tasks.js`): each exports
 * task definitions made with defineTask — a default export (one definition or
 * an array) and/or named exports. Anything else a module exports is ignored.
 */
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { defineTask, type AnyTaskDefinition } from '../core/definition.js';
import { UsageError } from './exit-codes.js';

export async function loadTaskModules(paths: readonly string[], cwd: string): Promise<AnyTaskDefinition[]> {
  const byType = new Map<string, { definition: AnyTaskDefinition; from: string }>();
  for (const path of paths) {
    const absolute = resolve(cwd, path);
    if (!existsSync(absolute)) throw new UsageError(`task module ${path} does not exist (resolved to ${absolute})`, 'modules');
    const exports = await importModule(absolute, path);
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
  return [...byType.values()].map(({ definition }) => definition);
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

/** A definition has a string `type` and an `execute` function or a schema (a producer's module); defineTask checks the rest. */
function looksLikeDefinition(value: unknown): value is AnyTaskDefinition {
  if (typeof value !== 'object' || value === null) return false;
  const candidate = value as { type?: unknown; execute?: unknown; schema?: unknown };
  return typeof candidate.type === 'string' && (typeof candidate.execute === 'function' || typeof candidate.schema === 'object');
}
