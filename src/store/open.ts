/**
 * openStore(url): one way for the server, the CLI, the bench and the examples
 * to open any store from a URL, loading only the driver that URL needs.
 *
 *   sqlite:tasks.db · sqlite:///abs/path.db · sqlite::memory:   → SqliteStore
 *   postgres://user@host:5432/db?schema=tasklease&poolSize=10   → PostgresStore
 *     behind PgBouncer in transaction mode: ?pooler=transaction, with
 *     &listenConnectionString=<URL-encoded direct URL> or &pollOnly=true;
 *     partitioned history: ?historyMoveAfterMs=21600000
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
  /** PostgreSQL behind a pooler in transaction mode ('transaction'); overrides `?pooler=` in the URL. */
  pooler?: 'session' | 'transaction';
}

/** The PostgresStore options a URL may carry as query parameters (removed before the URL reaches the driver). */
const POSTGRES_PARAMS = ['schema', 'poolSize', 'pooler', 'listenConnectionString', 'pollOnly', 'historyMoveAfterMs'];

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
  checkKnownKeys('openStore', options, ['poolSize', 'schema', 'pooler']);
  if (dialect === 'sqlite') {
    const { SqliteStore } = await loadDialect('sqlite');
    return new SqliteStore({ path: sqlitePath(url) });
  }
  const parsed = new URL(url);
  const poolSize = options.poolSize ?? numberParam(parsed, 'poolSize');
  if (dialect === 'postgres') {
    const param = (name: string): string | undefined => parsed.searchParams.get(name) ?? undefined;
    const schema = options.schema ?? param('schema');
    // Checked by PostgresStore (InvalidOptionsError naming the field).
    const pooler = (options.pooler ?? param('pooler')) as 'session' | 'transaction' | undefined;
    const listenConnectionString = param('listenConnectionString');
    const pollOnly = booleanParam(parsed, 'pollOnly');
    const historyMoveAfterMs = numberParam(parsed, 'historyMoveAfterMs');
    for (const key of POSTGRES_PARAMS) parsed.searchParams.delete(key);
    const { PostgresStore } = await loadDialect('postgres');
    return new PostgresStore({
      connectionString: parsed.toString(),
      ...(schema ? { schema } : {}),
      ...(poolSize ? { poolSize } : {}),
      ...(pooler ? { pooler } : {}),
      ...(listenConnectionString ? { listenConnectionString } : {}),
      ...(pollOnly !== undefined ? { pollOnly } : {}),
      ...(historyMoveAfterMs !== undefined ? { historyMoveAfterMs } : {}),
    });
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

function booleanParam(url: URL, name: string): boolean | undefined {
  const value = url.searchParams.get(name);
  if (value === null) return undefined;
  if (value === 'true' || value === '1') return true;
  if (value === 'false' || value === '0') return false;
  throw new InvalidOptionsError('openStore', name, `must be true or false (got ${value})`);
}

/** The URL without its password, for messages and logs. */
export function redactUrl(url: string): string {
  return url.replace(/\/\/([^:/@]+):[^@/]*@/, '//$1:***@');
}
