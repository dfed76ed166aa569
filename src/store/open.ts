/**
 * openStore(url): one way for the server, the CLI, the bench and the examples
 * to open any store from a URL, loading only the driver that URL needs.
 *
 *   sqlite:tasks.db · sqlite:///abs/path.db · sqlite::memory:   → SqliteStore
 *   postgres://user@host:5432/db?schema=tasklease&poolSize=10   → PostgresStore
 *   mysql://root@127.0.0.1:3306/db?poolSize=10 (mariadb:// too) → MysqlStore
 */
import { InvalidOptionsError } from '../core/errors.js';
import { checkKnownKeys } from '../core/validate.js';
import { loadDialect } from './dialects.js';
import type { Store } from './types.js';

export interface OpenStoreOptions {
  /** Connections in the store's pool (PostgreSQL, MySQL); overrides `?poolSize=` in the URL. */
  poolSize?: number;
  /** PostgreSQL schema; overrides `?schema=` in the URL. */
  schema?: string;
}

/** The dialect a store URL names, or a typed error naming the accepted forms. */
export function dialectOfUrl(url: string): 'sqlite' | 'postgres' | 'mysql' {
  const scheme = /^([a-z0-9+.-]+):/i.exec(url ?? '')?.[1]?.toLowerCase();
  if (scheme === 'sqlite' || scheme === 'file') return 'sqlite';
  if (scheme === 'postgres' || scheme === 'postgresql') return 'postgres';
  if (scheme === 'mysql' || scheme === 'mariadb') return 'mysql';
  throw new InvalidOptionsError('openStore', 'url', `must start with sqlite:, postgres:// or mysql:// (got ${JSON.stringify(redactUrl(String(url)))})`);
}

export async function openStore(url: string, options: OpenStoreOptions = {}): Promise<Store> {
  const dialect = dialectOfUrl(url);
  checkKnownKeys('openStore', options, ['poolSize', 'schema']);
  if (dialect === 'sqlite') {
    const { SqliteStore } = await loadDialect('sqlite');
    return new SqliteStore({ path: sqlitePath(url) });
  }
  const parsed = new URL(url);
  const poolSize = options.poolSize ?? numberParam(parsed, 'poolSize');
  if (dialect === 'postgres') {
    const schema = options.schema ?? parsed.searchParams.get('schema') ?? undefined;
    for (const key of ['schema', 'poolSize']) parsed.searchParams.delete(key);
    const { PostgresStore } = await loadDialect('postgres');
    return new PostgresStore({ connectionString: parsed.toString(), ...(schema ? { schema } : {}), ...(poolSize ? { poolSize } : {}) });
  }
  parsed.searchParams.delete('poolSize');
  if (parsed.protocol === 'mariadb:') parsed.protocol = 'mysql:';
  const { MysqlStore } = await loadDialect('mysql');
  return new MysqlStore({ uri: parsed.toString(), ...(poolSize ? { poolSize } : {}) });
}

/** `sqlite:rel/path.db`, `sqlite:///abs/path.db`, `sqlite://./rel.db`, `sqlite::memory:`. */
function sqlitePath(url: string): string {
  const rest = url.replace(/^(sqlite|file):/i, '');
  if (rest === ':memory:') return ':memory:';
  const path = rest.startsWith('//') ? rest.slice(2) : rest;
  const withoutQuery = path.split('?')[0]!;
  if (withoutQuery.length === 0) throw new InvalidOptionsError('openStore', 'url', 'sqlite: needs a file path, e.g. sqlite:tasks.db');
  return decodeURIComponent(withoutQuery);
}

function numberParam(url: URL, name: string): number | undefined {
  const value = url.searchParams.get(name);
  if (value === null) return undefined;
  const number = Number(value);
  if (!Number.isInteger(number) || number < 1) throw new InvalidOptionsError('openStore', name, `must be a positive integer (got ${value})`);
  return number;
}

/** The URL without its password, for messages and logs. */
export function redactUrl(url: string): string {
  return url.replace(/\/\/([^:/@]+):[^@/]*@/, '//$1:***@');
}
