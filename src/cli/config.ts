/**
 * Configuration: flags > environment > config file > defaults. Every field is
 * declared once below with its environment variable and range, so a bad value
 * fails with a message naming the field and where it came from.
 */
import { existsSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe } from '../core/validate.js';
import { UsageError } from './exit-codes.js';

export const DEFAULT_DATABASE_URL = 'sqlite:tasklease.db';
export const DEFAULT_CONFIG_FILE = 'tasklease.config.json';
const LOG_LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'] as const;

export interface CliConfig {
  databaseUrl: string;
  /** PostgreSQL schema (default: the store's, `tasklease`). */
  schema?: string;
  poolSize?: number;
  /** PostgreSQL behind a pooler in transaction mode: 'transaction' (PostgresStore option pooler). */
  pooler?: 'session' | 'transaction';
  /** Owner stamped on submitted tasks. */
  owner?: string;
  /** Keys that open encrypted payloads and results for display (`k1:<base64>,k2:<base64>`: client/encryption.ts parseKeys). */
  payloadKeys?: string;
  /** A bulk operation's lease (client option bulkLeaseMs): how soon another process goes on with it after this one dies. */
  bulkLeaseMs?: number;
  logLevel: (typeof LOG_LEVELS)[number];
  /** Worker options for `tasklease worker`. */
  worker: Partial<Record<WorkerField, number>> & { fairOwners?: boolean };
}

type WorkerField =
  | 'concurrency'
  | 'prefetch'
  | 'leaseMs'
  | 'heartbeatIntervalMs'
  | 'pollIntervalMs'
  | 'shutdownGraceMs'
  | 'globalConcurrency'
  | 'typeConcurrency'
  | 'ownerConcurrency'
  | 'scheduleRefreshMs'
  | 'adaptiveIntervalMs';

interface FieldSpec {
  /** Path in the config file; also the key of a flag override. */
  key: string;
  env: string;
  kind: 'string' | 'integer' | 'enum' | 'boolean';
  min?: number;
  max?: number;
  values?: readonly string[];
}

const DAY_MS = 86_400_000;
const FIELDS: readonly FieldSpec[] = [
  { key: 'databaseUrl', env: 'TASKLEASE_DATABASE_URL', kind: 'string' },
  { key: 'schema', env: 'TASKLEASE_SCHEMA', kind: 'string' },
  { key: 'poolSize', env: 'TASKLEASE_POOL_SIZE', kind: 'integer', min: 1, max: 1000 },
  { key: 'pooler', env: 'TASKLEASE_POOLER', kind: 'enum', values: ['session', 'transaction'] },
  { key: 'owner', env: 'TASKLEASE_OWNER', kind: 'string' },
  { key: 'payloadKeys', env: 'TASKLEASE_PAYLOAD_KEYS', kind: 'string' },
  { key: 'bulkLeaseMs', env: 'TASKLEASE_BULK_LEASE_MS', kind: 'integer', min: 1000, max: 600_000 },
  { key: 'logLevel', env: 'TASKLEASE_LOG_LEVEL', kind: 'enum', values: LOG_LEVELS },
  { key: 'worker.concurrency', env: 'TASKLEASE_CONCURRENCY', kind: 'integer', min: 1, max: 10_000 },
  { key: 'worker.prefetch', env: 'TASKLEASE_PREFETCH', kind: 'integer', min: 0, max: 10_000 },
  { key: 'worker.leaseMs', env: 'TASKLEASE_LEASE_MS', kind: 'integer', min: 1000, max: DAY_MS },
  { key: 'worker.heartbeatIntervalMs', env: 'TASKLEASE_HEARTBEAT_INTERVAL_MS', kind: 'integer', min: 100, max: DAY_MS },
  { key: 'worker.pollIntervalMs', env: 'TASKLEASE_POLL_INTERVAL_MS', kind: 'integer', min: 10, max: DAY_MS },
  { key: 'worker.shutdownGraceMs', env: 'TASKLEASE_SHUTDOWN_GRACE_MS', kind: 'integer', min: 0, max: DAY_MS },
  { key: 'worker.globalConcurrency', env: 'TASKLEASE_GLOBAL_CONCURRENCY', kind: 'integer', min: 1, max: 100_000 },
  { key: 'worker.typeConcurrency', env: 'TASKLEASE_TYPE_CONCURRENCY', kind: 'integer', min: 1, max: 100_000 },
  { key: 'worker.ownerConcurrency', env: 'TASKLEASE_OWNER_CONCURRENCY', kind: 'integer', min: 1, max: 100_000 },
  { key: 'worker.fairOwners', env: 'TASKLEASE_FAIR_OWNERS', kind: 'boolean' },
  { key: 'worker.scheduleRefreshMs', env: 'TASKLEASE_SCHEDULE_REFRESH_MS', kind: 'integer', min: 0, max: DAY_MS },
  { key: 'worker.adaptiveIntervalMs', env: 'TASKLEASE_ADAPTIVE_INTERVAL_MS', kind: 'integer', min: 0, max: 3_600_000 },
];

/** Environment and file spellings of a boolean; anything else fails with the field named. */
const BOOLEANS = new Map<unknown, boolean>([
  [true, true],
  [false, false],
  ['true', true],
  ['false', false],
  ['1', true],
  ['0', false],
]);

export type ConfigOverrides = Partial<Record<string, string | number | boolean | undefined>>;

export interface ConfigSources {
  /** Flag values by field key (`databaseUrl`, `worker.concurrency`…); undefined = not given. */
  flags: ConfigOverrides;
  env: Readonly<Record<string, string | undefined>>;
  cwd: string;
  /** --config (or TASKLEASE_CONFIG): must exist. Else ./tasklease.config.json is read if present. */
  configPath?: string | undefined;
}

export function resolveConfig(sources: ConfigSources): CliConfig {
  const file = readConfigFile(sources);
  const config: CliConfig = { databaseUrl: DEFAULT_DATABASE_URL, logLevel: 'info', worker: {} };
  for (const field of FIELDS) {
    const flag = sources.flags[field.key];
    const fromEnv = sources.env[field.env];
    const [raw, origin] =
      flag !== undefined
        ? [flag, `flag for ${field.key}`]
        : fromEnv !== undefined && fromEnv !== ''
          ? [fromEnv, field.env]
          : file.values.has(field.key)
            ? [file.values.get(field.key), `${file.path} field ${field.key}`]
            : [undefined, ''];
    if (raw === undefined) continue;
    setPath(config, field.key, checkValue(field, raw, origin));
  }
  return config;
}

function checkValue(field: FieldSpec, raw: unknown, origin: string): string | number | boolean {
  const fail = (expected: string): never => {
    throw new UsageError(`${field.key} (from ${origin}) must be ${expected}, got ${describe(raw)}`, field.key);
  };
  if (field.kind === 'boolean') return BOOLEANS.get(typeof raw === 'string' ? raw.trim() : raw) ?? fail('true or false (1 or 0)');
  if (field.kind === 'integer') {
    const number = typeof raw === 'string' && /^-?\d+$/.test(raw.trim()) ? Number(raw) : raw;
    if (typeof number !== 'number' || !Number.isInteger(number) || number < field.min! || number > field.max!)
      fail(`an integer from ${field.min} to ${field.max}`);
    return number as number;
  }
  if (typeof raw !== 'string' || raw.length === 0) fail('a non-empty string');
  if (field.kind === 'enum' && !field.values!.includes(raw as string)) fail(`one of ${field.values!.join(', ')}`);
  return raw as string;
}

function readConfigFile(sources: ConfigSources): { path: string; values: Map<string, unknown> } {
  const given = sources.configPath ?? sources.env.TASKLEASE_CONFIG;
  const path = resolve(sources.cwd, given ?? DEFAULT_CONFIG_FILE);
  if (!existsSync(path)) {
    if (given !== undefined) throw new UsageError(`config file ${path} does not exist`, 'config');
    return { path, values: new Map() };
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(path, 'utf8'));
  } catch (error) {
    throw new UsageError(`config file ${path} is not valid JSON: ${(error as Error).message}`, 'config');
  }
  const values = new Map<string, unknown>();
  flatten(parsed, '', values, path);
  const known = new Set(FIELDS.map((f) => f.key));
  for (const key of values.keys()) {
    if (!known.has(key)) throw new UsageError(`${path}: "${key}" is not a configuration field (known: ${[...known].join(', ')})`, key);
  }
  return { path, values };
}

function flatten(value: unknown, prefix: string, into: Map<string, unknown>, path: string): void {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    if (prefix === '') throw new UsageError(`config file ${path} must hold a JSON object`, 'config');
    into.set(prefix, value);
    return;
  }
  // Only `worker` nests: any other object is a value, and checkValue names its field.
  if (prefix !== '' && prefix !== 'worker') return void into.set(prefix, value);
  for (const [key, inner] of Object.entries(value)) flatten(inner, prefix ? `${prefix}.${key}` : key, into, path);
}

function setPath(config: CliConfig, key: string, value: string | number | boolean): void {
  const [head, tail] = key.split('.');
  if (tail === undefined) (config as unknown as Record<string, unknown>)[head!] = value;
  else (config.worker as Record<string, unknown>)[tail] = value;
}

/** The environment variable of each field, for `--help` and docs. */
export function configFields(): readonly { key: string; env: string }[] {
  return FIELDS.map(({ key, env }) => ({ key, env }));
}
