/**
 * The package as a user meets it: `npm pack`, then a fresh consumer project
 * installs the tarball (from npm's cache where it can) and
 * - type-checks with `tsc --strict`, nodenext and no skipLibCheck, where the
 *   root entry pulls in no driver's types and `pool` / `store.db` are typed;
 * - gets "ESM-only" from require();
 * - as a PostgreSQL-only user (pg installed, better-sqlite3 not) imports
 *   `tasklease` and `tasklease/postgres`, and gets DRIVER_MISSING naming
 *   better-sqlite3 from the SQLite store;
 * - runs the README's example, extracted from README.md, to completion;
 * - runs a handler test through tasklease/testing with no test framework.
 * The drivers, zod and TypeScript come from this repository's node_modules
 * (linked), so nothing is compiled and the test stays well under two minutes.
 */
import { execFile } from 'node:child_process';
import { existsSync, lstatSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { extractReadmeExample } from './readme-example.js';

const run = promisify(execFile);
const root = join(import.meta.dirname, '..', '..');
const work = mkdtempSync(join(tmpdir(), 'tl-consumer-'));
const consumer = join(work, 'consumer');
const tsc = join(root, 'node_modules', 'typescript', 'bin', 'tsc');
let installOutput = '';
const DRIVER_TYPES = /node_modules\/(@types\/pg|@types\/better-sqlite3|better-sqlite3|mysql2|pg)\//;

/** The child's environment without the npm_* variables of an enclosing `npm test`, which would steer the inner npm. */
function cleanEnv(): NodeJS.ProcessEnv {
  return Object.fromEntries(Object.entries(process.env).filter(([key]) => !key.toLowerCase().startsWith('npm_')));
}

async function sh(command: string, args: string[], cwd: string): Promise<{ stdout: string; stderr: string }> {
  return run(command, args, { cwd, env: cleanEnv(), maxBuffer: 32 * 1024 * 1024 });
}

/** Makes a package of this repository's node_modules visible to the consumer, as if installed. */
function link(name: string): void {
  const target = join(consumer, 'node_modules', name);
  mkdirSync(dirname(target), { recursive: true });
  symlinkSync(join(root, 'node_modules', name), target, 'dir');
}

/** Every package.json under a node_modules tree (nested ones too). */
function installedPackages(dir: string): { name: string; version: string; engines?: { node?: string } }[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir).flatMap((entry) => {
    if (entry.startsWith('.') || lstatSync(join(dir, entry)).isSymbolicLink()) return [];
    if (entry.startsWith('@')) return installedPackages(join(dir, entry));
    const manifest = join(dir, entry, 'package.json');
    const own = existsSync(manifest) ? [JSON.parse(readFileSync(manifest, 'utf8')) as { name: string; version: string; engines?: { node?: string } }] : [];
    return [...own, ...installedPackages(join(dir, entry, 'node_modules'))];
  });
}

const TSC_STRICT = ['--strict', '--module', 'nodenext', '--moduleResolution', 'nodenext', '--target', 'es2022', '--types', 'node'];

async function tscIn(args: string[]): Promise<string[]> {
  const { stdout } = await sh(process.execPath, [tsc, ...TSC_STRICT, ...args], consumer).catch((error: { stdout?: string; message: string }) => {
    throw new Error(`tsc failed:\n${error.stdout ?? error.message}`);
  });
  return stdout.split('\n').filter(Boolean);
}

/** The declaration files a program rooted at `file` reads (resolution only, no checking: fast). */
const filesRead = (file: string): Promise<string[]> => tscIn(['--listFilesOnly', file]);

beforeAll(async () => {
  // The package as built (by CI's `npm run build`, or the tests' globalSetup when stale): prepack's rebuild would empty
  // dist/ while other files' servers read dist/ui.
  await sh('npm', ['pack', '--ignore-scripts', '--pack-destination', work, '--silent'], root);
  const tarball = readdirSync(work).find((name) => name.endsWith('.tgz'));
  if (!tarball) throw new Error('npm pack wrote no tarball');
  mkdirSync(consumer);
  writeFileSync(join(consumer, 'package.json'), JSON.stringify({ name: 'consumer', private: true, type: 'module' }));
  const installed = await sh('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund', join(work, tarball)], consumer);
  installOutput = `${installed.stdout}${installed.stderr}`;
}, 150_000);
afterAll(() => rmSync(work, { recursive: true, force: true }));

describe('the packed package in a fresh consumer project', () => {
  it('installs without EBADENGINE, and with no dependency that needs a newer Node than the package claims (>=20)', () => {
    const engines = (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { engines: { node: string } }).engines.node;
    expect(engines).toBe('>=20');
    expect(installOutput).not.toMatch(/EBADENGINE/); // on Node 20, what a user sees
    // On any Node: the consumer's tree (no overrides of this repository's) holds no package that needs Node 21 or later.
    const needsNewer = installedPackages(join(consumer, 'node_modules'))
      .map(({ name, version, engines: wanted }) => ({ name: `${name}@${version}`, node: wanted?.node ?? '' }))
      .filter(({ node }) => node !== '' && node.split('||').every((range) => /^\s*(>=?|\^|~)?\s*v?(2[1-9]|[3-9]\d)/.test(range)));
    expect(needsNewer).toEqual([]);
  });

  it('ships the built entry points, the sources its source maps name, LICENSE and CHANGELOG, and leaves the drivers to the user', () => {
    const installed = join(consumer, 'node_modules', 'tasklease');
    for (const file of [
      'dist/src/index.js',
      'dist/src/sqlite.d.ts',
      'dist/src/postgres.js',
      'dist/src/mysql.js',
      'dist/src/testing/index.js',
      'dist/src/testing/index.d.ts',
      'require.cjs',
      'LICENSE',
      'CHANGELOG.md',
      'README.md',
    ]) {
      expect(existsSync(join(installed, file)), file).toBe(true);
    }
    expect(existsSync(join(installed, 'test'))).toBe(false);
    const map = JSON.parse(readFileSync(join(installed, 'dist/src/index.js.map'), 'utf8')) as { sources: string[] };
    expect(existsSync(join(installed, 'dist/src', map.sources[0]!))).toBe(true);
    for (const driver of ['pg', 'mysql2', 'better-sqlite3']) expect(existsSync(join(consumer, 'node_modules', driver)), driver).toBe(false);
  });

  it('answers require() with "ESM-only"', async () => {
    const error = await sh(process.execPath, ['-e', "require('tasklease')"], consumer).catch((e: { stderr: string }) => e);
    expect((error as { stderr: string }).stderr).toContain('tasklease is ESM-only: use import');
  });

  it('resolves no driver types from the root entry, and only pg from tasklease/postgres', async () => {
    writeFileSync(join(consumer, 'root-only.ts'), ROOT_ONLY);
    writeFileSync(join(consumer, 'pg-only.ts'), PG_ONLY);
    const fromRoot = await filesRead('root-only.ts');
    expect(fromRoot.some((file) => file.endsWith('node_modules/tasklease/dist/src/index.d.ts'))).toBe(true);
    expect(fromRoot.filter((file) => DRIVER_TYPES.test(file))).toEqual([]);
    const fromPostgres = await filesRead('pg-only.ts');
    expect(fromPostgres.some((file) => file.includes('node_modules/@types/pg/'))).toBe(true);
    expect(fromPostgres.filter((file) => /better-sqlite3|mysql2/.test(file))).toEqual([]);
  });

  it("type-checks the consumers and the README's example with tsc --strict, nodenext, no skipLibCheck", async () => {
    link('zod');
    writeFileSync(join(consumer, 'example.ts'), extractReadmeExample(readFileSync(join(root, 'README.md'), 'utf8')));
    writeFileSync(join(consumer, 'sqlite-types.ts'), SQLITE_TYPES);
    writeFileSync(join(consumer, 'testing-kit.ts'), TESTING_KIT);
    // One program for all five files: the libraries' declarations are checked once (most of the time here).
    await tscIn(['--outDir', 'out', 'root-only.ts', 'pg-only.ts', 'example.ts', 'sqlite-types.ts', 'testing-kit.ts']);
    expect(existsSync(join(consumer, 'out', 'example.js'))).toBe(true);
  }, 120_000);

  it('runs for a PostgreSQL-only user without better-sqlite3, and names better-sqlite3 when SQLite is asked for', async () => {
    link('pg');
    const { stdout } = await sh(process.execPath, ['out/pg-only.js'], consumer);
    expect(JSON.parse(stdout)).toEqual({
      postgresStore: 'function',
      betterSqlite3: 'ERR_MODULE_NOT_FOUND',
      sqliteEntry: { code: 'DRIVER_MISSING', message: 'tasklease/sqlite needs the better-sqlite3 package, which is not installed: npm install better-sqlite3' },
      openStore: 'DRIVER_MISSING',
    });
  });

  it("runs the README's example to completion against SQLite, and again against the same database", async () => {
    link('better-sqlite3');
    const successes = async (): Promise<string[]> =>
      (await sh(process.execPath, ['out/example.js'], consumer)).stdout
        .trim()
        .split('\n')
        .filter((line) => / SUCCESS$/.test(line));
    const first = await successes();
    expect(first).toHaveLength(4);
    expect(existsSync(join(consumer, 'tasks.db'))).toBe(true);
    // The second run submits three new tasks and gets the idempotent fourth back, finished: it still ends.
    const second = await successes();
    expect(second).toHaveLength(4);
    expect(second.filter((line) => first.includes(line))).toEqual([first[3]]);
  });

  it('runs a handler test through tasklease/testing without a test framework', async () => {
    const { stdout } = await sh(process.execPath, ['out/testing-kit.js'], consumer);
    expect(JSON.parse(stdout)).toEqual({ status: 'SUCCESS', attempts: 2, retryAfterMs: 1000, enqueued: 'mail.send', assertion: 'ERR_ASSERTION' });
  });
});

const ROOT_ONLY = `
import { createClient, defineTask, openStore, type Store } from 'tasklease';

export const ping = defineTask({ type: 'ping', execute: () => undefined });
export async function open(url: string): Promise<Store> {
  const store = await openStore(url);
  createClient({ store, tasks: [ping] });
  return store;
}
`;

/** Runs in the consumer: what a PostgreSQL-only application can import, and what it is told about SQLite. */
const PG_ONLY = `
import pg from 'pg';
import { openStore } from 'tasklease';
import { PostgresStore } from 'tasklease/postgres';

/** Never called: the compiler checks these lines. */
export function typed(pool: pg.Pool): PostgresStore {
  // @ts-expect-error the pool option is a pg.Pool, not any
  new PostgresStore({ pool: 'not a pool' });
  return new PostgresStore({ pool, schema: 'app_tasks' });
}

const codeOf = (error: unknown): unknown => (error as { code?: unknown }).code;
const sqliteEntry: string = 'tasklease/sqlite'; // not a literal: the compiler must not read the SQLite types
const sqlite = await import(sqliteEntry).then(() => ({ code: 'loaded', message: '' }), (error: Error) => ({ code: codeOf(error), message: error.message }));
console.log(JSON.stringify({
  postgresStore: typeof PostgresStore,
  betterSqlite3: await import(['better', 'sqlite3'].join('-')).then(() => 'installed', codeOf),
  sqliteEntry: sqlite,
  openStore: await openStore('sqlite:never.db').then(() => 'opened', codeOf),
}));
`;

/** Runs in the consumer: a handler that fails once, run to its end by the test kit's clock; what it enqueued, asserted. */
const TESTING_KIT = `
import { defineTask, TaskFailure } from 'tasklease';
import { createTestKit } from 'tasklease/testing';

const mail = defineTask<{ to: string }>({ type: 'mail.send', execute: () => undefined });
let calls = 0;
const signup = defineTask<{ email: string }>({
  type: 'user.signup',
  execute: async (_ctx, payload) => {
    if (++calls === 1) throw new TaskFailure('directory busy');
    await kit.client.submit(mail, { to: payload.email });
  },
});
const kit = await createTestKit({ tasks: [signup, mail], worker: { retry: { baseDelayMs: 1000, jitter: 0 } } });
const started = kit.now().getTime();
const run = await kit.runTask(signup, { email: 'ada@example.com' });
await kit.assertEnqueued('mail.send', { to: 'ada@example.com' });
const assertion = await kit.assertEnqueued('mail.send', { to: 'bob@example.com' }).then(() => 'passed', (error: { code?: string }) => error.code);
console.log(JSON.stringify({
  status: run.status,
  attempts: run.attempts.length,
  retryAfterMs: run.attempts[1]!.startedAt.getTime() - started,
  enqueued: (await kit.enqueued('mail.send'))[0]!.taskType,
  assertion,
}));
await kit.close();
`;

/** Never run: the compiler checks that the SQLite store's \`db\` keeps better-sqlite3's types. */
const SQLITE_TYPES = `
import { SqliteStore } from 'tasklease/sqlite';

export function typed(store: SqliteStore): number {
  // @ts-expect-error db is better-sqlite3's Database, not any
  store.db.noSuchMethod();
  return store.db.prepare('SELECT 1 AS one').pluck().get() as number;
}
`;
