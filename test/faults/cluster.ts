/**
 * A PostgreSQL cluster the fault tests own: initdb in a temp directory, its
 * own port, started and stopped with pg_ctl. Only this cluster is ever
 * crashed, frozen or made read-only — never the shared servers on 5432/3306.
 *
 * initdb refuses to run as root, so when the tests run as root the cluster is
 * created and run as the `postgres` OS user (runuser), with the directory
 * handed to it. fsync is off: `pg_ctl stop -m immediate` kills the server's
 * processes, not the kernel, so committed WAL in the page cache survives and
 * the crash test still proves what it claims.
 */
import { execFile } from 'node:child_process';
import { chownSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';

const run = promisify(execFile);

export interface ClusterTools {
  /** Prefix that runs a command as the cluster's OS user ([] when not root). */
  asUser: string[];
  uid: number | null;
  gid: number | null;
}

/** Whether initdb and pg_ctl are on PATH (and, as root, a `postgres` user exists to run them). */
export async function clusterTools(): Promise<ClusterTools | null> {
  try {
    await run('initdb', ['--version']);
    await run('pg_ctl', ['--version']);
    if (userInfo().uid !== 0) return { asUser: [], uid: null, gid: null };
    const [uid, gid] = await Promise.all([run('id', ['-u', 'postgres']), run('id', ['-g', 'postgres'])]);
    return { asUser: ['runuser', '-u', 'postgres', '--'], uid: Number(uid.stdout), gid: Number(gid.stdout) };
  } catch {
    return null;
  }
}

/**
 * Runs a command as the cluster's OS user in `dir`, a directory of its own:
 * the test's working directory may be one that user cannot enter (a clone
 * under root's home), and pg_ctl and initdb then fail with "could not change
 * directory".
 */
export async function runAs(tools: ClusterTools, dir: string, command: string, args: string[]): Promise<string> {
  const [program, ...rest] = [...tools.asUser, command, ...args];
  return (await run(program!, rest, { timeout: 120_000, cwd: dir })).stdout;
}

/** A database server a fault test owns and may crash, freeze or make read-only (this cluster, or maria-server.ts). */
export interface DatabaseServer {
  readonly url: string;
  start(): Promise<void>;
  /** Kills the server without a shutdown, as a crash would. */
  crash(): Promise<void>;
  /** Stops every process of the server; thaw() continues them. */
  freeze(): Promise<number[]>;
  thaw(pids: number[]): void;
  setReadOnly(on: boolean): Promise<void>;
  /** After a case, whatever it did: running, not frozen, writable. */
  restoreHealth(): Promise<void>;
  destroy(): Promise<void>;
}

export class TestCluster implements DatabaseServer {
  /** Below the kernel's ephemeral range (32768–60999 here): a port drawn in it can already be some connection's own end. */
  readonly port = 20000 + Math.floor(Math.random() * 5000);
  readonly url: string;
  private readonly dir: string;
  private admin: pg.Pool | null = null;

  private constructor(private readonly tools: ClusterTools) {
    this.dir = mkdtempSync(join(tmpdir(), 'tasklease-faults-'));
    if (tools.uid !== null) chownSync(this.dir, tools.uid, tools.gid!);
    this.url = `postgres://postgres@127.0.0.1:${this.port}/postgres`;
  }

  static async create(tools: ClusterTools): Promise<TestCluster> {
    const cluster = new TestCluster(tools);
    await cluster.as('initdb', ['-D', cluster.dataDir, '-U', 'postgres', '-A', 'trust', '--no-sync', '-E', 'UTF8']);
    await cluster.start();
    return cluster;
  }

  private get dataDir(): string {
    return join(this.dir, 'data');
  }

  private async as(command: string, args: string[]): Promise<string> {
    return runAs(this.tools, this.dir, command, args);
  }

  async start(): Promise<void> {
    const options = `-p ${this.port} -c listen_addresses=127.0.0.1 -c unix_socket_directories=${this.dir} -c fsync=off -c max_connections=200`;
    await this.as('pg_ctl', ['start', '-w', '-t', '60', '-D', this.dataDir, '-l', join(this.dir, 'server.log'), '-o', options]);
  }

  /** Kills the server's processes without a checkpoint, as a crash would. */
  async crash(): Promise<void> {
    await this.closeAdmin();
    this.thaw(await this.processIds()); // a stopped process would hold the shutdown until it is continued
    await this.as('pg_ctl', ['stop', '-m', 'immediate', '-w', '-D', this.dataDir]);
  }

  /** The postmaster and every process it started. */
  async processIds(): Promise<number[]> {
    const postmaster = Number(readFileSync(join(this.dataDir, 'postmaster.pid'), 'utf8').split('\n')[0]);
    const { stdout } = await run('ps', ['-o', 'pid=', '--ppid', String(postmaster)]);
    return [
      postmaster,
      ...stdout
        .split('\n')
        .map((line) => Number(line.trim()))
        .filter((pid) => pid > 0),
    ];
  }

  /** SIGSTOPs every process of this cluster (a frozen database); thaw() continues them. */
  async freeze(): Promise<number[]> {
    const pids = await this.processIds();
    signalAll(pids, 'SIGSTOP'); // a backend that exited since ps is simply not there to stop
    return pids;
  }

  thaw(pids: number[]): void {
    signalAll(pids, 'SIGCONT');
  }

  async query<R extends pg.QueryResultRow = Record<string, unknown>>(sql: string, values: unknown[] = []): Promise<R[]> {
    this.admin ??= newAdminPool(this.url);
    return (await this.admin.query<R>(sql, values)).rows;
  }

  /** A read-only failover as an operator would make one: every new transaction is read-only from now on. */
  async setReadOnly(on: boolean): Promise<void> {
    await this.query(`ALTER SYSTEM SET default_transaction_read_only = ${on ? 'on' : 'off'}`);
    await this.query('SELECT pg_reload_conf()');
  }

  /** pg_terminate_backend on every connection whose application_name starts with `prefix`; returns how many. */
  async terminate(prefix: string): Promise<number> {
    const rows = await this.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name LIKE $1 || '%' AND pid <> pg_backend_pid()", [
      prefix,
    ]);
    return rows.length;
  }

  /** After a case, whatever it did: running, not frozen, writable. */
  async restoreHealth(): Promise<void> {
    try {
      this.thaw(await this.processIds());
    } catch {
      await this.start(); // crashed and not restarted
    }
    await waitUntilAnswering(() => this.query('SELECT 1'));
    await this.setReadOnly(false);
  }

  async destroy(): Promise<void> {
    await this.closeAdmin();
    try {
      this.thaw(await this.processIds());
      await this.as('pg_ctl', ['stop', '-m', 'immediate', '-w', '-D', this.dataDir]);
    } catch {
      // not running
    }
    rmSync(this.dir, { recursive: true, force: true });
  }

  private async closeAdmin(): Promise<void> {
    const admin = this.admin;
    this.admin = null;
    await admin?.end().catch(() => undefined);
  }
}

function signalAll(pids: number[], signal: NodeJS.Signals): void {
  for (const pid of pids) {
    try {
      process.kill(pid, signal);
    } catch {
      // exited meanwhile
    }
  }
}

export async function waitUntilAnswering(probe: () => Promise<unknown>): Promise<void> {
  for (let tries = 0; ; tries += 1) {
    try {
      await probe();
      return;
    } catch (error) {
      if (tries > 100) throw error;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
}

function newAdminPool(url: string): pg.Pool {
  const pool = new pg.Pool({ connectionString: url, max: 2, application_name: 'tl-faults-admin' });
  pool.on('error', () => undefined);
  return pool;
}
