/**
 * Loading a store's module, whose driver is an optional peer dependency.
 * Kept apart from open.ts on purpose: this module's declarations name the
 * store modules (and through them the drivers' types), so only the per-store
 * entry points (src/sqlite.ts, src/postgres.ts, src/mysql.ts) and openStore's
 * body may import it; the root entry's types must never reach it.
 */
import { DriverMissingError } from '../core/errors.js';

/**
 * Each store's module and the driver package it imports. The drivers are
 * optional peer dependencies, so a store's module is only ever loaded
 * dynamically: an application never loads (or needs) a driver it does not use.
 */
const DIALECTS = {
  sqlite: { driver: 'better-sqlite3', entry: 'tasklease/sqlite', load: () => import('./sqlite/store.js') },
  postgres: { driver: 'pg', entry: 'tasklease/postgres', load: () => import('./postgres/index.js') },
  mysql: { driver: 'mysql2', entry: 'tasklease/mysql', load: () => import('./mysql/store.js') },
} as const;

export type Dialect = keyof typeof DIALECTS;
type DialectModule<D extends Dialect> = Awaited<ReturnType<(typeof DIALECTS)[D]['load']>>;

/** A store's module; a DriverMissingError naming the package when its driver is not installed. */
export async function loadDialect<D extends Dialect>(dialect: D): Promise<DialectModule<D>> {
  const { driver, entry, load } = DIALECTS[dialect];
  try {
    return (await load()) as DialectModule<D>;
  } catch (error) {
    if (isMissingPackage(error, driver)) throw new DriverMissingError(driver, entry, { cause: error });
    throw error;
  }
}

function isMissingPackage(error: unknown, name: string): boolean {
  const { code, message } = (error ?? {}) as { code?: unknown; message?: unknown };
  if (code !== 'ERR_MODULE_NOT_FOUND' && code !== 'MODULE_NOT_FOUND') return false;
  return typeof message === 'string' && (message.includes(`'${name}'`) || message.includes(`'${name}/`));
}
