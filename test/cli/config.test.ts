/** Configuration precedence (flags > environment > file), its validation messages, help and version — no database needed beyond SQLite. */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { resolveConfig } from '../../src/cli/config.js';
import { loadWorkerModules } from '../../src/cli/task-modules.js';
import { splitRecord } from '../../src/cli/records.js';
import { duration } from '../../src/cli/parse.js';
import { cli } from './harness.js';

const FIXTURES = join(import.meta.dirname, 'fixtures');

describe('CLI configuration', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'tasklease-cli-config-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  const dbUsed = async (argv: string[], env: Record<string, string> = {}): Promise<string> => {
    const migrated = await cli(['migrate', '--json', ...argv], { cwd: dir, env });
    expect(migrated.code, migrated.stderr).toBe(0);
    return migrated.json<{ dialect: string }>().dialect;
  };

  it('takes the PostgreSQL pooler mode from the flag or TASKLEASE_POOLER, and rejects any other mode', async () => {
    const from = (flags: Record<string, string>, env: Record<string, string>) => resolveConfig({ flags, env, cwd: dir }).pooler;
    expect(from({}, { TASKLEASE_POOLER: 'transaction' })).toBe('transaction');
    expect(from({ pooler: 'session' }, { TASKLEASE_POOLER: 'transaction' })).toBe('session');
    expect(from({}, {})).toBeUndefined();
    expect(() => from({}, { TASKLEASE_POOLER: 'statement' })).toThrow(/pooler \(from TASKLEASE_POOLER\)/);
    const bad = await cli(['list', '--pooler', 'statement'], { cwd: dir });
    expect([bad.code, bad.stderr]).toEqual([2, expect.stringMatching(/--pooler.*statement.*session, transaction/)]);
  });

  it('reads the database URL from the flag, else the environment, else the config file, else sqlite:tasklease.db', async () => {
    writeFileSync(join(dir, 'tasklease.config.json'), JSON.stringify({ databaseUrl: 'sqlite:from-file.db', worker: { concurrency: 3 } }));
    const files = (): string[] =>
      ['from-file.db', 'from-env.db', 'from-flag.db', 'tasklease.db'].filter((name) => {
        try {
          rmSync(join(dir, name));
          return true;
        } catch {
          return false;
        }
      });
    await dbUsed([]);
    expect(files()).toEqual(['from-file.db']);
    await dbUsed([], { TASKLEASE_DATABASE_URL: 'sqlite:from-env.db' });
    expect(files()).toEqual(['from-env.db']);
    await dbUsed(['--database-url', 'sqlite:from-flag.db'], { TASKLEASE_DATABASE_URL: 'sqlite:from-env.db' });
    expect(files()).toEqual(['from-flag.db']);
    rmSync(join(dir, 'tasklease.config.json'));
    await dbUsed([]);
    expect(files()).toEqual(['tasklease.db']);
  });

  it('takes --config (or TASKLEASE_CONFIG) and merges worker fields with their environment variables', () => {
    const path = join(dir, 'other.json');
    writeFileSync(path, JSON.stringify({ databaseUrl: 'postgres://db/app', schema: 'jobs', worker: { concurrency: 3, leaseMs: 30000 } }));
    const config = resolveConfig({ flags: { 'worker.leaseMs': 20000 }, env: { TASKLEASE_CONCURRENCY: '12', TASKLEASE_CONFIG: path }, cwd: dir });
    expect(config).toEqual({ databaseUrl: 'postgres://db/app', schema: 'jobs', logLevel: 'info', worker: { concurrency: 12, leaseMs: 20000 } });
  });

  it('takes the fair-owners switch and the schedule refresh from flags, the environment or the file; a bad boolean names its source', () => {
    const path = join(dir, 'fair.json');
    writeFileSync(path, JSON.stringify({ worker: { fairOwners: true, scheduleRefreshMs: 5000 } }));
    expect(resolveConfig({ flags: {}, env: { TASKLEASE_CONFIG: path }, cwd: dir }).worker).toEqual({ fairOwners: true, scheduleRefreshMs: 5000 });
    const fromEnv = resolveConfig({ flags: { 'worker.scheduleRefreshMs': 0 }, env: { TASKLEASE_CONFIG: path, TASKLEASE_FAIR_OWNERS: '0' }, cwd: dir });
    expect(fromEnv.worker).toEqual({ fairOwners: false, scheduleRefreshMs: 0 });
    expect(() => resolveConfig({ flags: {}, env: { TASKLEASE_FAIR_OWNERS: 'yes' }, cwd: dir })).toThrow(
      'worker.fairOwners (from TASKLEASE_FAIR_OWNERS) must be true or false (1 or 0), got "yes"',
    );
  });

  it('a worker takes the periodic tasks of a module\u2019s `schedules` export; a `schedules` that is no array is a usage error', async () => {
    const loaded = await loadWorkerModules([join(FIXTURES, 'scheduled-tasks.ts')], dir);
    expect(loaded.tasks.map((t) => t.type)).toEqual(['cli.echo']);
    expect(loaded.schedules).toEqual([{ key: 'cli.every-minute', taskType: 'cli.echo', cron: '* * * * *' }]);
    const bad = join(dir, 'bad-schedules.mjs');
    writeFileSync(bad, "export const schedules = 'every minute';\nexport const t = { type: 'x', execute: () => undefined };\n");
    await expect(loadWorkerModules([bad], dir)).rejects.toThrow('the export "schedules" must be an array of schedules');
  });

  it('names the field, and where its bad value came from', async () => {
    const badEnv = await cli(['list'], { cwd: dir, env: { TASKLEASE_POOL_SIZE: 'many' } });
    expect([badEnv.code, badEnv.stderr]).toEqual([2, 'error USAGE: poolSize (from TASKLEASE_POOL_SIZE) must be an integer from 1 to 1000, got "many"\n']);
    writeFileSync(join(dir, 'tasklease.config.json'), JSON.stringify({ worker: { concurency: 3 } }));
    const typo = await cli(['list', '--json'], { cwd: dir });
    expect(typo.code).toBe(2);
    expect(typo.json()).toMatchObject({
      error: { code: 'USAGE', field: 'worker.concurency', message: expect.stringContaining('"worker.concurency" is not a configuration field') },
    });
    writeFileSync(join(dir, 'tasklease.config.json'), JSON.stringify({ worker: { concurrency: 0 } }));
    expect((await cli(['list'], { cwd: dir })).stderr).toMatch(
      /worker.concurrency \(from .*tasklease.config.json field worker.concurrency\) must be an integer from 1 to 10000, got 0/,
    );
    writeFileSync(join(dir, 'tasklease.config.json'), '{ not json');
    expect((await cli(['list'], { cwd: dir })).stderr).toMatch(/^error USAGE: config file .* is not valid JSON/);
    const missing = await cli(['list', '--config', 'nope.json'], { cwd: dir });
    expect([missing.code, missing.stderr]).toEqual([2, expect.stringContaining('nope.json does not exist')]);
    rmSync(join(dir, 'tasklease.config.json'));
    const badUrl = await cli(['list', '--database-url', 'redis://x'], { cwd: dir });
    expect([badUrl.code, badUrl.stderr]).toEqual([
      2,
      expect.stringMatching(/^error INVALID_OPTIONS: openStore option "url" must start with sqlite:, postgres:\/\/ or mysql:\/\//),
    ]);
  });

  it('prints help and the version (exit 0); no command or an unknown one is a usage error (exit 2)', async () => {
    const help = await cli(['--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('Exit codes: 0 ok, 1 operational failure, 2 usage or bad input, 3 not found.');
    expect(help.stdout).toContain('TASKLEASE_DATABASE_URL');
    expect((await cli(['dlq', '--help'])).stdout).toMatch(/replay-batch/);
    const version = await cli(['--version']);
    expect([version.code, version.stdout]).toEqual([0, expect.stringMatching(/^\d+\.\d+\.\d+\n$/)]);
    const none = await cli([]);
    expect([none.code, none.stderr]).toEqual([2, expect.stringContaining('Usage: tasklease')]);
    expect((await cli(['--json'])).json()).toEqual({ error: { code: 'USAGE', message: 'a command is required (see tasklease --help)' } });
    const unknown = await cli(['lsit']);
    expect([unknown.code, unknown.stderr]).toEqual([2, expect.stringContaining("error USAGE: unknown command 'lsit'\n(Did you mean list?)")]);
  });

  it('parses durations and CSV records', () => {
    expect([duration('500ms'), duration('90s'), duration('10m'), duration('1h30m'), duration('2d')]).toEqual([500, 90_000, 600_000, 5_400_000, 172_800_000]);
    for (const bad of ['10', '1x', 'm', '10m ago']) expect(() => duration(bad), bad).toThrow(/must be a duration/);
    expect(splitRecord('a,"b,c","say ""hi""",')).toEqual(['a', 'b,c', 'say "hi"', '']);
    expect(splitRecord('a,"open')).toBeNull();
  });
});
