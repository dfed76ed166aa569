/**
 * A MariaDB server the fault tests own (the MySQL twin of cluster.ts):
 * mariadb-install-db in a temp directory, mariadbd on its own port and
 * socket, crashed with SIGKILL, frozen with SIGSTOP, made read-only with
 * `read_only` — never the shared server on 3306. As root, the server runs
 * as the `mysql` OS user (mariadbd refuses to run as root otherwise).
 * The redo log is flushed at each commit but not synced (like the cluster's
 * fsync=off): SIGKILL kills the process, not the kernel.
 */
import { execFile, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import mysql from 'mysql2/promise';
import { waitUntilAnswering, type DatabaseServer } from './cluster.js';

const run = promisify(execFile);

/** Whether mariadb-install-db and mariadbd are on PATH (and, as root, a `mysql` user exists to run them). */
export async function mariaTools(): Promise<{ user: string | null } | null> {
  try {
    await run('mariadbd', ['--version']);
    await run('which', ['mariadb-install-db']);
    if (userInfo().uid !== 0) return { user: null };
    await run('id', ['-u', 'mysql']);
    return { user: 'mysql' };
  } catch {
    return null;
  }
}

export class MariaServer implements DatabaseServer {
  /** Below the kernel's ephemeral range, as the PostgreSQL cluster's (cluster.ts). */
  readonly port = 25000 + Math.floor(Math.random() * 5000);
  /** The server's `test` database, as root (no password). */
  readonly url: string;
  private readonly dir: string;
  private pid: number | null = null;
  private admin: mysql.Pool | null = null;

  private constructor(private readonly user: string | null) {
    this.dir = mkdtempSync(join(tmpdir(), 'tasklease-maria-'));
    this.url = `mysql://root@127.0.0.1:${this.port}/test`;
  }

  static async create(tools: { user: string | null }): Promise<MariaServer> {
    const server = new MariaServer(tools.user);
    if (tools.user) await run('chown', [tools.user, server.dir]);
    const userArgs = tools.user ? [`--user=${tools.user}`] : [];
    await run(
      'mariadb-install-db',
      ['--no-defaults', `--datadir=${server.dataDir}`, ...userArgs, '--auth-root-authentication-method=normal', '--skip-test-db'],
      {
        timeout: 120_000,
      },
    );
    await server.start();
    await server.query('CREATE DATABASE IF NOT EXISTS test');
    return server;
  }

  private get dataDir(): string {
    return join(this.dir, 'data');
  }

  async start(): Promise<void> {
    const args = [
      '--no-defaults',
      `--datadir=${this.dataDir}`,
      `--port=${this.port}`,
      '--bind-address=127.0.0.1',
      `--socket=${join(this.dir, 'sock')}`,
      `--pid-file=${join(this.dir, 'pid')}`,
      `--log-error=${join(this.dir, 'error.log')}`,
      '--innodb-buffer-pool-size=64M',
      '--innodb-flush-log-at-trx-commit=2',
      '--max-connections=300',
      ...(this.user ? [`--user=${this.user}`] : []),
    ];
    const child = spawn('mariadbd', args, { stdio: 'ignore', detached: false });
    this.pid = child.pid ?? null;
    child.on('exit', () => {
      if (this.pid === child.pid) this.pid = null;
    });
    await waitUntilAnswering(() => this.query('SELECT 1'));
  }

  /** SIGKILL: no shutdown, as a crash. */
  async crash(): Promise<void> {
    await this.closeAdmin();
    const pid = this.pid;
    if (pid === null) return;
    signal(pid, 'SIGCONT');
    signal(pid, 'SIGKILL');
    await waitFor(() => this.pid === null);
  }

  /** mariadbd is one process (threads): stopping it freezes every connection. */
  async freeze(): Promise<number[]> {
    if (this.pid !== null) signal(this.pid, 'SIGSTOP');
    return this.pid === null ? [] : [this.pid];
  }

  thaw(pids: number[]): void {
    for (const pid of pids) signal(pid, 'SIGCONT');
  }

  async setReadOnly(on: boolean): Promise<void> {
    await this.query(`SET GLOBAL read_only = ${on ? 'ON' : 'OFF'}`);
  }

  async query(sql: string, values: unknown[] = []): Promise<Record<string, unknown>[]> {
    this.admin ??= mysql.createPool({ uri: `mysql://root@127.0.0.1:${this.port}/`, connectionLimit: 2 });
    return (await this.admin.query(sql, values))[0] as Record<string, unknown>[];
  }

  async restoreHealth(): Promise<void> {
    if (this.pid === null) await this.start();
    else this.thaw([this.pid]);
    await waitUntilAnswering(() => this.query('SELECT 1'));
    await this.setReadOnly(false);
  }

  async destroy(): Promise<void> {
    await this.crash();
    rmSync(this.dir, { recursive: true, force: true });
  }

  private async closeAdmin(): Promise<void> {
    const admin = this.admin;
    this.admin = null;
    await admin?.end().catch(() => undefined);
  }
}

function signal(pid: number, name: NodeJS.Signals): void {
  try {
    process.kill(pid, name);
  } catch {
    // exited meanwhile
  }
}

async function waitFor(check: () => boolean): Promise<void> {
  for (let tries = 0; !check(); tries += 1) {
    if (tries > 300) throw new Error('mariadbd did not exit');
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
