/** The machine and the versions a run was measured on (for RESULTS.md). */
import { readFileSync } from 'node:fs';
import os from 'node:os';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { Redis } from 'ioredis';
import mysql from 'mysql2/promise';
import { MYSQL_URL } from './config.js';
import { redisOptions } from './config.js';
import { pgQuery } from './systems/postgres.js';

export interface Environment {
  date: string;
  loadAverage: { start: string; end: string };
  machine: { nproc: number; memoryGiB: number; cpu: string; os: string };
  services: Record<string, string>;
  packages: Record<string, string>;
}

const require = createRequire(import.meta.url);

/** The installed version of a package (its package.json, found from its entry point). */
export function packageVersion(name: string): string {
  try {
    let dir = dirname(require.resolve(name));
    for (;;) {
      try {
        const manifest = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { name?: string; version?: string };
        if (manifest.name === name && manifest.version) return manifest.version;
      } catch {
        // no package.json at this level
      }
      const parent = dirname(dir);
      if (parent === dir) return 'unknown';
      dir = parent;
    }
  } catch {
    return 'not installed';
  }
}

async function attempt(fn: () => Promise<string>): Promise<string> {
  try {
    return await fn();
  } catch (error) {
    return `not reachable (${(error as Error).message.split('\n')[0]})`;
  }
}

export const loadAverage = (): string => os.loadavg()[0]!.toFixed(2);

export async function describeEnvironment(packages: string[], loadAtStart: string): Promise<Environment> {
  const services: Record<string, string> = {
    node: process.version,
    PostgreSQL: await attempt(async () => (await pgQuery<{ v: string }>("select current_setting('server_version') as v"))[0]?.v ?? '?'),
    Redis: await attempt(async () => {
      const redis = new Redis({ ...redisOptions(), lazyConnect: true, maxRetriesPerRequest: 1, retryStrategy: () => null });
      try {
        await redis.connect();
        const info = await redis.info('server');
        return /redis_version:(\S+)/.exec(info)?.[1] ?? '?';
      } finally {
        redis.disconnect();
      }
    }),
    MariaDB: await attempt(async () => {
      const connection = await mysql.createConnection({ uri: MYSQL_URL, connectTimeout: 3000 });
      try {
        const [rows] = await connection.query('select version() as v');
        return String((rows as Array<{ v: string }>)[0]?.v ?? '?');
      } finally {
        await connection.end();
      }
    }),
  };
  const cpus = os.cpus();
  return {
    date: new Date().toISOString(),
    loadAverage: { start: loadAtStart, end: loadAverage() },
    machine: {
      nproc: os.availableParallelism(),
      memoryGiB: Math.round((os.totalmem() / 1024 ** 3) * 10) / 10,
      cpu: cpus[0]?.model.trim() ?? 'unknown',
      os: `${os.type()} ${os.release()} ${os.arch()}`,
    },
    services,
    packages: Object.fromEntries([...new Set(packages)].sort().map((name) => [name, packageVersion(name)])),
  };
}
