/**
 * Where the services live (override with environment variables) and the
 * names this run owns. Every schema, database and key prefix the bench
 * creates starts with `bench_` and carries the orchestrator's pid, so that
 * concurrent runs and other engineers' schemas are never touched.
 */
export const PG_URL = process.env.BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
export const REDIS_URL = process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379';
export const MYSQL_URL = process.env.BENCH_MYSQL_URL ?? 'mysql://root@127.0.0.1:3306';

/** The run id baked into every name; the orchestrator passes it to workers in their options. */
export const RUN_ID = `${process.pid}`;

/** A schema / database / prefix name owned by this run, e.g. `bench_graphile_12345`. */
export function ownedName(system: string): string {
  return `bench_${system.replace(/[^a-z0-9]+/gi, '_').toLowerCase()}_${RUN_ID}`;
}

/** Quotes a name we generated ourselves (letters, digits, underscores only). */
export function quoteIdent(name: string): string {
  if (!/^bench_[a-z0-9_]+$/.test(name)) throw new Error(`refusing to touch ${name}: not a bench_* name`);
  return `"${name}"`;
}

export function redisOptions(): { host: string; port: number } {
  const url = new URL(REDIS_URL);
  return { host: url.hostname, port: Number(url.port || 6379) };
}

export function* chunks(count: number, size: number): Generator<number> {
  for (let done = 0; done < count; done += size) yield Math.min(size, count - done);
}

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
