/**
 * A Patroni cluster of the failover suite's own (issue 24), from Debian's
 * packages (`sh deploy/ci-install.sh`: patroni, etcd-server, haproxy):
 *
 *   etcd (one member) ── Patroni ×N ── PostgreSQL 15 ×N (one primary, N−1 replicas)
 *                                   └── HAProxy: one port, routed to whichever
 *                                       member answers Patroni's REST GET /primary
 *
 * Everything on ports of its own (PostgreSQL 21000–21999, etcd 22000–22099,
 * Patroni REST and HAProxy 22100–22199) and in one temporary directory, never
 * the shared servers. As root, every process runs as the `postgres` OS user
 * (PostgreSQL refuses root), started directly with that uid — not through
 * runuser, so that each PID we hold is the program's own and can be killed —
 * in the cluster's directory (cluster.ts: the test's working directory may be
 * one that user cannot enter). destroy() kills what it started, by PID, and
 * stops every PostgreSQL it finds in its data directories.
 *
 * `synchronous: true` is Patroni's synchronous_mode: a commit returns once a
 * synchronous standby has it, and Patroni promotes only that standby. With
 * `false`, replication is asynchronous and a failover may lose the last
 * commits the primary acknowledged. primary_start_timeout 0: a crashed
 * primary is failed over at once instead of restarted in place.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { chownSync, closeSync, existsSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { waitFor } from '../helpers/wait.js';
import { findTool, type SystemTool } from '../helpers/system-tools.js';
import { runAs, type ClusterTools } from './cluster.js';

const run = promisify(execFile);
const INSTALL = 'sh deploy/ci-install.sh (apt-get install -y patroni etcd-server haproxy)';
export const PATRONI_TOOLS: SystemTool[] = [
  { name: 'patroni', install: INSTALL },
  { name: 'patronictl', install: INSTALL },
  { name: 'etcd', install: INSTALL },
  { name: 'haproxy', install: INSTALL },
];
/** Debian's PostgreSQL 15 server binaries (TASKLEASE_PG_BIN overrides). */
export const PG_BIN = process.env.TASKLEASE_PG_BIN ?? '/usr/lib/postgresql/15/bin';

/**
 * The programs' paths; null outside CI when one is missing (after one line saying how to install them); throws on CI
 * (system-tools.ts).
 */
export function patroniTools(file: string): Record<string, string> | null {
  const wanted = [...PATRONI_TOOLS, { name: join(PG_BIN, 'postgres'), install: INSTALL }];
  const found = wanted.map((tool) => [tool.name, findTool(tool.name)] as const);
  const missing = found.filter(([, path]) => path === null).map(([name]) => name);
  if (missing.length === 0) return Object.fromEntries(found) as Record<string, string>;
  const line = `${missing.join(', ')} not installed; install them with: ${INSTALL} (PostgreSQL 15 at ${PG_BIN}, or set TASKLEASE_PG_BIN)`;
  if (process.env.CI === 'true') throw new Error(`the Patroni failover tests must run on CI: ${line}`);
  console.log(`Patroni failover tests skipped (${file}): ${line}`);
  return null;
}

export interface PatroniOptions {
  /** 2 or 3 members. */
  members: number;
  /** Patroni's synchronous_mode. */
  synchronous: boolean;
}

export interface Member {
  name: string;
  role: string;
  state: string;
  port: number;
  timeline?: number;
  lag?: number | string;
}

/**
 * HAProxy in front of the members: one port that reaches the primary only. Patroni answers GET /primary with 200 on
 * the member that holds the leader lock and runs as primary, 503 elsewhere; a member marked down has its open
 * sessions shut (on-marked-down shutdown-sessions), so no connection stays on a demoted primary through HAProxy.
 * The tests check every second and mark a member down after 2 failed checks; docs/production.md has the same file.
 */
export function haproxyConfig(options: { port: number; members: { name: string; port: number; restPort: number }[]; inter?: string }): string {
  const inter = options.inter ?? '1s';
  return `global
    maxconn 1000

defaults
    mode tcp
    log global
    retries 2
    timeout connect 4s
    timeout client 30m
    timeout server 30m
    timeout check 2s

listen primary
    bind 127.0.0.1:${options.port}
    option httpchk GET /primary
    http-check expect status 200
    default-server inter ${inter} fall 2 rise 1 on-marked-down shutdown-sessions
${options.members.map((m) => `    server ${m.name} 127.0.0.1:${m.port} maxconn 300 check port ${m.restPort}`).join('\n')}
`;
}

interface Ports {
  pg: number[];
  rest: number[];
  etcdClient: number;
  etcdPeer: number;
  haproxy: number;
}

export class PatroniCluster {
  readonly scope = `tl${Math.floor(Math.random() * 1e9).toString(36)}`;
  private readonly processes = new Map<string, ChildProcess>();
  private readonly exited = new Set<string>();

  private constructor(
    private readonly tools: ClusterTools,
    private readonly binaries: Record<string, string>,
    readonly options: PatroniOptions,
    readonly dir: string,
    readonly ports: Ports,
  ) {}

  /** etcd, the members (one bootstraps, the others clone it) and HAProxy, up and routed; torn down again if that fails. */
  static async start(tools: ClusterTools, binaries: Record<string, string>, options: PatroniOptions): Promise<PatroniCluster> {
    const dir = mkdtempSync(join(tmpdir(), 'tasklease-patroni-'));
    if (tools.uid !== null) chownSync(dir, tools.uid, tools.gid!);
    const cluster = new PatroniCluster(tools, binaries, options, dir, await freePorts(options.members));
    live.add(cluster);
    try {
      await cluster.up();
    } catch (error) {
      const logs = cluster.logTail();
      await cluster.destroy();
      throw new Error(`${(error as Error).message}\n${logs}`);
    }
    return cluster;
  }

  /** The primary, through HAProxy: what the stores and workers are given. */
  get url(): string {
    return `postgres://postgres@127.0.0.1:${this.ports.haproxy}/postgres`;
  }

  memberUrl(name: string): string {
    return `postgres://postgres@127.0.0.1:${this.memberPort(name)}/postgres`;
  }

  memberPort(name: string): number {
    return this.ports.pg[this.names.indexOf(name)]!;
  }

  get names(): string[] {
    return Array.from({ length: this.options.members }, (_, i) => `pg${i}`);
  }

  private async up(): Promise<void> {
    const { etcdClient, etcdPeer } = this.ports;
    const etcdUrl = (port: number) => `http://127.0.0.1:${port}`;
    mkdirSync(join(this.dir, 'etcd'));
    this.chown(join(this.dir, 'etcd'));
    this.spawn('etcd', this.binaries.etcd!, [
      '--name=etcd0',
      `--data-dir=${join(this.dir, 'etcd', 'data')}`,
      `--listen-client-urls=${etcdUrl(etcdClient)}`,
      `--advertise-client-urls=${etcdUrl(etcdClient)}`,
      `--listen-peer-urls=${etcdUrl(etcdPeer)}`,
      `--initial-advertise-peer-urls=${etcdUrl(etcdPeer)}`,
      `--initial-cluster=etcd0=${etcdUrl(etcdPeer)}`,
      '--unsafe-no-fsync',
    ]);
    await waitFor(async () => (await httpStatus(`${etcdUrl(etcdClient)}/health`)) === 200, 'etcd to answer', 60_000, 100);
    // One member first, so that it bootstraps; the others clone it.
    for (const [i, name] of this.names.entries()) {
      this.startMember(name);
      if (i === 0)
        await waitFor(async () => (await this.members()).some((m) => m.role === 'leader' && m.state === 'running'), `${name} to bootstrap`, 90_000, 200);
    }
    const haproxyCfg = join(this.dir, 'haproxy.cfg');
    const members = this.names.map((name, i) => ({ name, port: this.ports.pg[i]!, restPort: this.ports.rest[i]! }));
    writeFileSync(haproxyCfg, haproxyConfig({ port: this.ports.haproxy, members }));
    this.chown(haproxyCfg);
    this.spawn('haproxy', this.binaries.haproxy!, ['-db', '-f', haproxyCfg]);
    await this.healthy();
  }

  /** A member's Patroni configuration (JSON is YAML). */
  private memberConfig(name: string): string {
    const i = this.names.indexOf(name);
    const home = join(this.dir, name);
    const trust = { username: 'postgres' };
    return JSON.stringify(
      {
        scope: this.scope,
        namespace: '/tasklease/',
        name,
        log: { level: 'INFO', dir: home },
        restapi: { listen: `127.0.0.1:${this.ports.rest[i]}`, connect_address: `127.0.0.1:${this.ports.rest[i]}` },
        etcd3: { hosts: `127.0.0.1:${this.ports.etcdClient}` },
        bootstrap: {
          dcs: {
            // loop_wait + 2 × retry_timeout ≤ ttl: a leader that cannot reach etcd demotes itself before its lock expires.
            ttl: 10,
            loop_wait: 1,
            retry_timeout: 4,
            maximum_lag_on_failover: 1048576,
            primary_start_timeout: 0,
            synchronous_mode: this.options.synchronous,
            postgresql: {
              use_pg_rewind: true,
              use_slots: true,
              parameters: {
                wal_level: 'replica',
                hot_standby: 'on',
                wal_log_hints: 'on',
                max_connections: 300,
                max_wal_senders: 10,
                max_replication_slots: 10,
              },
            },
          },
          initdb: [{ encoding: 'UTF8' }, { auth: 'trust' }, { username: 'postgres' }],
        },
        postgresql: {
          listen: `127.0.0.1:${this.ports.pg[i]}`,
          connect_address: `127.0.0.1:${this.ports.pg[i]}`,
          data_dir: join(home, 'data'),
          bin_dir: PG_BIN,
          pgpass: join(home, 'pgpass'),
          authentication: { superuser: trust, replication: trust, rewind: trust },
          // fsync off: the faults kill processes, not the kernel (cluster.ts); the page cache keeps committed WAL.
          parameters: { unix_socket_directories: home, fsync: 'off', logging_collector: 'off' },
          pg_hba: ['local all all trust', 'host all all 127.0.0.1/32 trust', 'host replication all 127.0.0.1/32 trust'],
        },
        tags: { nofailover: false, noloadbalance: false, clonefrom: false, nosync: false },
      },
      null,
      2,
    );
  }

  private startMember(name: string): void {
    const home = join(this.dir, name);
    if (!existsSync(home)) {
      mkdirSync(home, { mode: 0o700 });
      this.chown(home);
    }
    const config = join(home, 'patroni.yml');
    writeFileSync(config, this.memberConfig(name));
    this.chown(config);
    this.spawn(name, this.binaries.patroni!, [config]);
  }

  private spawn(label: string, program: string, args: string[]): void {
    const log = openSync(join(this.dir, `${label}.out`), 'a');
    const ids = this.tools.uid === null ? {} : { uid: this.tools.uid, gid: this.tools.gid! };
    const child = spawn(program, args, {
      cwd: this.dir,
      ...ids,
      env: { PATH: `${PG_BIN}:/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin`, HOME: this.dir, LANG: 'C.UTF-8', LC_ALL: 'C.UTF-8' },
      stdio: ['ignore', log, log],
    });
    closeSync(log);
    this.processes.set(label, child);
    this.exited.delete(label);
    child.on('exit', () => this.exited.add(label));
  }

  private chown(path: string): void {
    if (this.tools.uid !== null) chownSync(path, this.tools.uid, this.tools.gid!);
  }

  /** The members as Patroni's REST API sees them (asked of each member in turn until one answers). */
  async members(): Promise<Member[]> {
    for (const port of this.ports.rest) {
      const body = await httpJson<{ members?: Member[] }>(`http://127.0.0.1:${port}/cluster`);
      if (body?.members) return body.members;
    }
    return [];
  }

  async leader(): Promise<string> {
    return waitFor(async () => (await this.members()).find((m) => m.role === 'leader' && m.state === 'running')?.name, 'a running leader', 120_000, 200);
  }

  /**
   * Every member running (replicas streaming), on one timeline, a synchronous standby in synchronous mode, and HAProxy
   * routing to the leader: a writable session through it.
   */
  async healthy(timeoutMs = 180_000): Promise<string> {
    // One condition: right after a fault the REST API may still name the old leader for a moment.
    return waitFor(
      async () => {
        const members = await this.members();
        const leader = members.find((m) => m.role === 'leader' && m.state === 'running');
        const replicas = members.filter((m) => m.role !== 'leader');
        const ok =
          leader !== undefined &&
          members.length === this.options.members &&
          replicas.every((m) => m.state === 'streaming' || m.state === 'running') &&
          new Set(members.map((m) => m.timeline)).size === 1 &&
          (!this.options.synchronous || members.some((m) => m.role === 'sync_standby'));
        return ok && (await this.throughHaproxy()) === leader.name ? leader.name : undefined;
      },
      'the Patroni cluster to be healthy and HAProxy to route to its leader',
      timeoutMs,
      250,
    ).catch((error: Error) => {
      throw new Error(`${error.message}\n${this.logTail()}`);
    });
  }

  /** The member HAProxy routes a new connection to (its port tells it), when that session is writable; else undefined. */
  private async throughHaproxy(): Promise<string | undefined> {
    const client = new pg.Client({ connectionString: this.url, connectionTimeoutMillis: 3000 });
    client.on('error', () => undefined);
    try {
      await client.connect();
      const { rows } = await client.query<{ port: number; standby: boolean }>("SELECT current_setting('port')::int AS port, pg_is_in_recovery() AS standby");
      return rows[0]!.standby ? undefined : this.names[this.ports.pg.indexOf(rows[0]!.port)];
    } catch {
      return undefined;
    } finally {
      await client.end().catch(() => undefined);
    }
  }

  /**
   * `patronictl switchover` from the leader to `candidate` — by default the synchronous standby (in synchronous mode
   * Patroni promotes no other), else the first other member; returns both names.
   */
  async switchover(candidate?: string): Promise<{ from: string; to: string }> {
    const from = await this.leader();
    const sync = (await this.members()).find((m) => m.role === 'sync_standby')?.name;
    const to = candidate ?? sync ?? this.names.find((name) => name !== from)!;
    const args = ['-c', join(this.dir, from, 'patroni.yml'), 'switchover', this.scope, '--leader', from, '--candidate', to, '--force'];
    const { stdout } = await run(this.binaries.patronictl!, args, { cwd: this.dir, timeout: 120_000, env: { ...process.env, HOME: this.dir } });
    if (!/switched over/i.test(stdout)) throw new Error(`patronictl switchover did not report success:\n${stdout}`);
    return { from, to };
  }

  /** SIGKILL to the leader's postmaster (its backends exit on their own as they notice); returns the leader's name. */
  async killPrimaryPostmaster(): Promise<string> {
    const leader = await this.leader();
    process.kill(this.postmasterPid(leader)!, 'SIGKILL');
    return leader;
  }

  private postmasterPid(name: string): number | null {
    try {
      return Number(readFileSync(join(this.dir, name, 'data', 'postmaster.pid'), 'utf8').split('\n')[0]) || null;
    } catch {
      return null;
    }
  }

  /** One statement on a member, directly (not through HAProxy). */
  async queryMember<R extends pg.QueryResultRow = Record<string, unknown>>(name: string, sql: string, values: unknown[] = []): Promise<R[]> {
    const client = new pg.Client({ connectionString: this.memberUrl(name), connectionTimeoutMillis: 5000, application_name: 'tl-patroni-admin' });
    client.on('error', () => undefined);
    try {
      await client.connect();
      return (await client.query<R>(sql, values)).rows;
    } finally {
      await client.end().catch(() => undefined);
    }
  }

  /** The last lines of every log of the cluster (for a failure's message). */
  logTail(lines = 15): string {
    const files = ['etcd.out', 'haproxy.out', ...this.names.flatMap((name) => [`${name}.out`, join(name, 'patroni.log')])];
    return files
      .map((file) => {
        try {
          return `--- ${file}\n${readFileSync(join(this.dir, file), 'utf8').split('\n').slice(-lines).join('\n')}`;
        } catch {
          return '';
        }
      })
      .filter(Boolean)
      .join('\n');
  }

  async destroy(): Promise<void> {
    // Patroni first, so that nobody restarts a PostgreSQL we stop; then each member's server; then HAProxy and etcd.
    for (const name of this.names) await this.kill(name);
    for (const name of this.names) {
      if (this.postmasterPid(name) === null) continue;
      await runAs(this.tools, this.dir, join(PG_BIN, 'pg_ctl'), ['stop', '-m', 'immediate', '-w', '-t', '30', '-D', join(this.dir, name, 'data')]).catch(() => {
        const pid = this.postmasterPid(name);
        if (pid !== null) signal(pid, 'SIGKILL');
      });
    }
    await this.kill('haproxy');
    await this.kill('etcd');
    rmSync(this.dir, { recursive: true, force: true });
    live.delete(this);
  }

  /** At the test process's exit, should destroy() not have run: SIGKILL to everything it started, at once. */
  killNow(): void {
    for (const [label, child] of this.processes) if (!this.exited.has(label) && child.pid !== undefined) signal(child.pid, 'SIGKILL');
    // A postmaster outlives its Patroni; its backends exit when they find it gone.
    for (const name of this.names) {
      const pid = this.postmasterPid(name);
      if (pid !== null) signal(pid, 'SIGKILL');
    }
    rmSync(this.dir, { recursive: true, force: true });
  }

  /** SIGKILL to a process we started, and its exit awaited. */
  private async kill(label: string): Promise<void> {
    const child = this.processes.get(label);
    if (!child || this.exited.has(label) || child.pid === undefined) return;
    const gone = new Promise((resolve) => child.once('exit', resolve));
    signal(child.pid, 'SIGKILL');
    await gone;
  }
}

/** Clusters started and not destroyed yet: killed when the test process exits without destroying them. */
const live = new Set<PatroniCluster>();
process.once('exit', () => {
  for (const cluster of live) cluster.killNow();
});

function signal(pid: number, name: NodeJS.Signals): void {
  try {
    process.kill(pid, name);
  } catch {
    // gone already
  }
}

async function httpStatus(url: string): Promise<number> {
  try {
    const response = await fetch(url, { signal: AbortSignal.timeout(2000) });
    await response.arrayBuffer();
    return response.status;
  } catch {
    return 0;
  }
}

async function httpJson<T>(url: string): Promise<T | null> {
  try {
    const response = await fetch(url, { signal: AbortSignal.timeout(2000) });
    return response.ok ? ((await response.json()) as T) : null;
  } catch {
    return null;
  }
}

/** Ports in the suite's ranges that nothing listens on now (PostgreSQL 21000–21999, etcd 22000–22099, REST and HAProxy 22100–22199). */
async function freePorts(members: number): Promise<Ports> {
  const pick = async (base: number, span: number, step: number, count: number): Promise<number[]> => {
    for (let tries = 0; tries < 50; tries += 1) {
      const start = base + step * Math.floor(Math.random() * Math.floor(span / step));
      const ports = Array.from({ length: count }, (_, i) => start + i);
      if ((await Promise.all(ports.map(isFree))).every(Boolean)) return ports;
    }
    throw new Error(`no ${count} free ports from ${base}`);
  };
  const pgPorts = await pick(21000, 1000, 10, members);
  const [etcdClient, etcdPeer] = await pick(22000, 100, 2, 2);
  const rest = await pick(22100, 100, 5, members + 1);
  return { pg: pgPorts, rest: rest.slice(0, members), etcdClient: etcdClient!, etcdPeer: etcdPeer!, haproxy: rest[members]! };
}

function isFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}
