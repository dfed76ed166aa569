/**
 * A PgBouncer of the test's own (issue 24): its own config in a temporary
 * directory, its own port, auth_type trust, pointing at the test server's
 * database (TASKLEASE_PG_URL); killed by PID afterwards. Debian's package:
 * `sh deploy/ci-install.sh` (.ci/run calls it). No binary: on CI
 * (CI=true) the file fails; elsewhere it is skipped with one console line
 * saying how to install it.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { PG_URL } from './postgres.js';
import { waitFor } from './wait.js';

const INSTALL_HINT = 'sh deploy/ci-install.sh (Debian package pgbouncer: apt-get install pgbouncer)';
/** TASKLEASE_PGBOUNCER names the binary; else the first of these that runs. */
const CANDIDATES = process.env.TASKLEASE_PGBOUNCER ? [process.env.TASKLEASE_PGBOUNCER] : ['pgbouncer', '/usr/sbin/pgbouncer', '/usr/bin/pgbouncer'];

export type PoolMode = 'session' | 'transaction';

export interface PgBouncer {
  readonly mode: PoolMode;
  /** The test server's database through this PgBouncer. */
  readonly url: string;
  readonly pid: number;
  /** Kills the process (its PID) and removes its directory. */
  stop(): Promise<void>;
}

/** The pgbouncer binary, or null (then: fails on CI, else prints the one skip line). */
export function pgbouncerBinary(file: string): string | null {
  for (const candidate of CANDIDATES) {
    const probe = spawnSync(candidate, ['--version'], { encoding: 'utf8' });
    if (probe.status === 0) return candidate;
  }
  if (process.env.CI === 'true') throw new Error(`pgbouncer is not installed; on CI the PgBouncer tests must run: ${INSTALL_HINT}`);
  console.log(`PgBouncer tests skipped (${file}): no pgbouncer binary; install it with: ${INSTALL_HINT}`);
  return null;
}

/**
 * The pgbouncer.ini of the tests, and of docs/production.md: what matters is
 * pool_mode and max_prepared_statements staying unset (1.18 has none). A
 * small server pool (default_pool_size) makes transaction pooling share
 * server connections between the store's clients, as in production.
 */
export function pgbouncerIni(options: { mode: PoolMode; port: number; dir: string; target: URL; poolSize: number }): string {
  const { mode, port, dir, target, poolSize } = options;
  const database = decodeURIComponent(target.pathname.slice(1)) || 'test';
  return `[databases]
${database} = host=${target.hostname} port=${target.port || 5432} dbname=${database}

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = ${port}
unix_socket_dir =
auth_type = trust
auth_file = ${join(dir, 'userlist.txt')}
pool_mode = ${mode}
default_pool_size = ${poolSize}
max_client_conn = 500
server_reset_query = DISCARD ALL
ignore_startup_parameters = extra_float_digits
`;
}

export async function startPgBouncer(binary: string, mode: PoolMode, poolSize = 6): Promise<PgBouncer> {
  const target = new URL(PG_URL);
  const dir = mkdtempSync(join(tmpdir(), 'tasklease-pgbouncer-'));
  // Run as root, pgbouncer must drop to another user (-u), who reads this directory.
  chmodSync(dir, 0o755);
  const port = await freePort();
  const user = decodeURIComponent(target.username) || 'postgres';
  writeFileSync(join(dir, 'userlist.txt'), `"${user}" ""\n`, { mode: 0o644 });
  const ini = join(dir, 'pgbouncer.ini');
  writeFileSync(ini, pgbouncerIni({ mode, port, dir, target, poolSize }), { mode: 0o644 });
  const asRoot = typeof process.getuid === 'function' && process.getuid() === 0;
  const child: ChildProcess = spawn(binary, [...(asRoot ? ['-u', 'postgres'] : []), ini], { stdio: ['ignore', 'ignore', 'pipe'] });
  let output = '';
  child.stderr?.on('data', (chunk: Buffer) => (output = (output + chunk.toString()).slice(-4000)));
  let exited = false;
  child.on('exit', () => (exited = true));
  const url = new URL(PG_URL);
  url.hostname = '127.0.0.1';
  url.port = String(port);
  const stop = async (): Promise<void> => {
    if (!exited && child.pid !== undefined) {
      const gone = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await gone;
    }
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    await waitFor(
      async () => {
        if (exited) throw new Error(`pgbouncer exited at start: ${output}`);
        return answers(url.toString());
      },
      `pgbouncer (${mode}) on port ${port}`,
      15_000,
      50,
    );
  } catch (error) {
    await stop();
    throw error;
  }
  return { mode, url: url.toString(), pid: child.pid!, stop };
}

async function answers(url: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 1000 });
  client.on('error', () => undefined);
  try {
    await client.connect();
    await client.query('SELECT 1');
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => undefined);
  }
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
}
