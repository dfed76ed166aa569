/**
 * Wake-ups on PostgreSQL: LISTEN/NOTIFY, heard by every process.
 * Submits, status changes and replays NOTIFY inside their own statement (so
 * a rolled-back submit wakes nobody); the other writes that owe a wake-up
 * (base.ts) send one after they commit (notifyPayload). One dedicated connection per store — never a pool
 * client, so a busy pool cannot starve it and it never holds one — opened
 * lazily on the first subscribe. When it dies (server restart,
 * pg_terminate_backend, network) it reconnects with capped exponential
 * backoff; workers keep polling meanwhile. Each time LISTEN takes effect
 * (the first time too) it tells every listener "something may have been
 * submitted" (taskTypes: []), since notifications sent before were heard by
 * nobody.
 *
 * Payloads are JSON on one channel per schema:
 *   {"k":"s","t":[types…]}  submitted (t empty: unknown types, wake everyone)
 *   {"k":"c","i":[ids…]}    cancellation requested
 *   {"k":"f","i":[ids…]}    outcomes written for awaited tasks (i empty: every waiter re-reads); finish.ts
 *   {"k":"p","n":nonce}     the listener's own probe (below)
 * NOTIFY payloads must stay under 8000 bytes; senders fall back to the
 * wildcard or split id lists (see insert.ts, queries.ts).
 *
 * LISTEN can take effect and still hear nothing: through a pooler in
 * transaction mode the LISTEN lands on a server connection that goes back
 * to the pool (issue 24). So each time LISTEN takes effect the listener
 * probes itself: one NOTIFY sent the way producers send theirs (the pool),
 * which must come back within PROBE_TIMEOUT_MS of its commit. When it does
 * not, the listener is deaf: it says so once (a process warning, code
 * TASKLEASE_WAKEUPS_DEAF, and PostgresStore.wakeups for health checks),
 * wakes every subscriber and waiter every DEAF_WAKE_MS instead (workers
 * claim, waiters re-read: a short poll), and probes again every
 * DEAF_REPROBE_MS until a probe comes back. The outcome NOTIFYs of waitFor
 * travel on the same connection and channel, so one probe answers for both.
 */
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import type { StoreEvent, StoreListener } from '../types.js';
import { run, type PgContext } from './connection.js';
import { quoteIdent } from './options.js';
import { uuidKey } from './encode.js';

/** Below PostgreSQL's 8000-byte payload limit, with room to spare. */
export const MAX_NOTIFY_BYTES = 7900;
export const WAKE_ALL_PAYLOAD = '{"k":"s","t":[]}';
export const WAKE_WAITERS_PAYLOAD = '{"k":"f","i":[]}';

/** A waiter's listener: `taskIds` written (empty: any may have been). */
export type OutcomeListener = (taskIds: readonly string[]) => void;

/** An event as its NOTIFY payload (see above); the caller keeps it under MAX_NOTIFY_BYTES. */
export function notifyPayload(event: StoreEvent): string {
  if (event.kind === 'cancelRequested') return JSON.stringify({ k: 'c', i: event.taskIds });
  return event.taskTypes.length === 0 ? WAKE_ALL_PAYLOAD : JSON.stringify({ k: 's', t: event.taskTypes });
}

const MIN_BACKOFF_MS = 100;
const MAX_BACKOFF_MS = 5000;
/** How long a probe may take to come back before the listener counts as deaf. */
export const PROBE_TIMEOUT_MS = 3000;
/** While deaf: every subscriber and waiter is woken this often (a short poll). */
export const DEAF_WAKE_MS = 250;
/** While deaf: probe again this often, and stop the short poll once one comes back. */
export const DEAF_REPROBE_MS = 30_000;

/** What PostgresStore.wakeups reports: whether wake-ups are known to arrive. */
export type WakeupState =
  /** Nobody subscribed yet (the listener opens on the first subscribe), or it is (re)connecting. */
  | 'idle'
  | 'connecting'
  /** LISTEN took effect; its probe has not come back yet. */
  | 'probing'
  /** The last probe came back. */
  | 'listening'
  /** The last probe did not come back in time: wake-ups are not heard (a transaction pooler?); subscribers are woken on a timer. */
  | 'deaf';

/** Sends a probe NOTIFY with this payload the way producers send theirs. */
export type ProbeSender = (payload: string) => Promise<void>;

export class PgListener {
  private readonly listeners = new Set<StoreListener>();
  private readonly waiters = new Set<OutcomeListener>();
  private client: pg.Client | null = null;
  private retryTimer: NodeJS.Timeout | null = null;
  private failures = 0;
  private started = false;
  private closed = false;
  private listeningNow = false;
  private stateNow: WakeupState = 'idle';
  private probe: { nonce: string; timer: NodeJS.Timeout | null } | null = null;
  private deafTimer: NodeJS.Timeout | null = null;
  private reprobeTimer: NodeJS.Timeout | null = null;
  private warned = false;

  constructor(
    private readonly config: pg.ClientConfig,
    private readonly channel: string,
    private readonly sendProbe: ProbeSender,
    private readonly warn: (message: string) => void = defaultWarn,
  ) {}

  /** Whether wake-ups are known to arrive (see the header). */
  get state(): WakeupState {
    return this.stateNow;
  }

  /** True while the LISTEN connection is up (diagnostics and tests). */
  get listening(): boolean {
    return this.listeningNow;
  }

  subscribe(listener: StoreListener): () => void {
    this.listeners.add(listener);
    this.start();
    return () => {
      this.listeners.delete(listener);
    };
  }

  /** Outcome NOTIFYs for waiters (client.waitFor); also called with [] each time LISTEN takes effect. */
  subscribeOutcomes(listener: OutcomeListener): () => void {
    this.waiters.add(listener);
    this.start();
    return () => {
      this.waiters.delete(listener);
    };
  }

  private start(): void {
    if (this.started || this.closed) return;
    this.started = true;
    this.stateNow = 'connecting';
    void this.connect();
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.retryTimer) clearTimeout(this.retryTimer);
    this.retryTimer = null;
    this.endProbe();
    this.stopDeafWakes();
    const client = this.client;
    this.client = null;
    this.listeningNow = false;
    if (client) await client.end().catch(() => undefined);
  }

  private async connect(): Promise<void> {
    if (this.closed) return;
    const client = new pg.Client(this.config);
    this.client = client;
    client.on('error', () => this.lost(client));
    client.on('end', () => this.lost(client));
    client.on('notification', (message) => {
      if (message.channel === this.channel && message.payload !== undefined && this.client === client) this.deliverPayload(message.payload);
    });
    try {
      await client.connect();
      await client.query(`LISTEN ${quoteIdent(this.channel)}`);
    } catch {
      this.lost(client);
      return;
    }
    if (this.client !== client) return; // closed or replaced while connecting
    this.failures = 0;
    this.listeningNow = true;
    // Whatever was submitted before LISTEN took effect (first subscribe, or
    // while reconnecting) sent its NOTIFY to nobody: wake everyone once.
    this.deliver({ kind: 'submitted', taskTypes: [] });
    this.deliverOutcomes([]);
    this.startProbe();
  }

  /** One NOTIFY to ourselves through the producers' path; deaf unless it comes back in time. */
  private startProbe(): void {
    this.endProbe();
    if (this.closed || !this.listeningNow) return;
    if (this.stateNow !== 'deaf') this.stateNow = 'probing';
    const nonce = randomUUID();
    const probe: { nonce: string; timer: NodeJS.Timeout | null } = { nonce, timer: null };
    this.probe = probe;
    // The clock starts once the NOTIFY has committed: a pool busy with handlers delays the probe, it does not make it deaf.
    const wait = (): void => {
      if (this.probe !== probe) return; // heard already, or superseded
      probe.timer = setTimeout(() => this.probeMissed(nonce), PROBE_TIMEOUT_MS);
      probe.timer.unref();
    };
    // A probe that cannot be sent (database down) is missed like one that is not heard.
    this.sendProbe(JSON.stringify({ k: 'p', n: nonce })).then(wait, wait);
  }

  private endProbe(): void {
    if (this.probe?.timer) clearTimeout(this.probe.timer);
    this.probe = null;
    if (this.reprobeTimer) clearTimeout(this.reprobeTimer);
    this.reprobeTimer = null;
  }

  private probeHeard(nonce: string): void {
    if (this.probe?.nonce !== nonce) return;
    this.endProbe();
    this.stateNow = 'listening';
    this.warned = false;
    this.stopDeafWakes();
  }

  private probeMissed(nonce: string): void {
    if (this.probe?.nonce !== nonce || this.closed) return;
    this.probe = null;
    this.stateNow = 'deaf';
    if (!this.warned) {
      this.warned = true;
      this.warn(
        `tasklease: PostgreSQL wake-ups are not heard on channel ${this.channel}: LISTEN took effect but its own NOTIFY did not come back within ` +
          `${PROBE_TIMEOUT_MS} ms (a pooler in transaction mode?). Workers and waiters now poll every ${DEAF_WAKE_MS} ms. Give the store ` +
          `listenConnectionString (a direct or session-pooled address) or pollOnly: true; see docs/production.md`,
      );
    }
    if (!this.deafTimer) {
      this.deafTimer = setInterval(() => {
        this.deliver({ kind: 'submitted', taskTypes: [] });
        this.deliverOutcomes([]);
      }, DEAF_WAKE_MS);
      this.deafTimer.unref();
    }
    this.reprobeTimer = setTimeout(() => this.startProbe(), DEAF_REPROBE_MS);
    this.reprobeTimer.unref();
  }

  private stopDeafWakes(): void {
    if (this.deafTimer) clearInterval(this.deafTimer);
    this.deafTimer = null;
  }

  private lost(client: pg.Client): void {
    if (this.client !== client) return; // an old connection's late event
    this.client = null;
    this.listeningNow = false;
    // A probe in flight belongs to the lost connection; the next connection probes anew. While deaf the short poll goes on.
    this.endProbe();
    if (this.stateNow !== 'deaf') this.stateNow = 'connecting';
    client.end().catch(() => undefined);
    if (this.closed) return;
    const backoff = Math.min(MAX_BACKOFF_MS, MIN_BACKOFF_MS * 2 ** this.failures);
    this.failures += 1;
    this.retryTimer = setTimeout(
      () => {
        this.retryTimer = null;
        void this.connect();
      },
      backoff * (0.5 + Math.random() / 2),
    );
  }

  private deliverPayload(payload: string): void {
    let parsed: { k?: unknown; t?: unknown; i?: unknown; n?: unknown };
    try {
      parsed = JSON.parse(payload) as typeof parsed;
    } catch {
      return; // not ours
    }
    if (parsed.k === 's' && Array.isArray(parsed.t)) this.deliver({ kind: 'submitted', taskTypes: parsed.t.map(String) });
    else if (parsed.k === 'c' && Array.isArray(parsed.i)) this.deliver({ kind: 'cancelRequested', taskIds: parsed.i.map(String) });
    else if (parsed.k === 'f' && Array.isArray(parsed.i)) this.deliverOutcomes(parsed.i.map(String));
    else if (parsed.k === 'p' && typeof parsed.n === 'string') this.probeHeard(parsed.n);
  }

  private deliverOutcomes(taskIds: readonly string[]): void {
    for (const listener of [...this.waiters]) {
      try {
        listener(taskIds);
      } catch {
        // as deliver()
      }
    }
  }

  private deliver(event: StoreEvent): void {
    for (const listener of [...this.listeners]) {
      try {
        listener(event);
      } catch {
        // a listener's bug must not stop delivery to the others
      }
    }
  }
}

function defaultWarn(message: string): void {
  process.emitWarning(message, { code: 'TASKLEASE_WAKEUPS_DEAF' });
}

/**
 * Marks `taskId` as awaited by one waiter (finish.ts NOTIFYs for it) and
 * answers the unmarking. Rows a crashed waiter left behind only cost a
 * spare NOTIFY for that task; those older than a day (the longest wait) go
 * with the next mark.
 */
export async function markAwaited(ctx: PgContext, taskId: string): Promise<() => Promise<void>> {
  // An id that is not a UUID names no task: nothing will finish under it.
  if (uuidKey(taskId) === null) return async () => undefined;
  const waiterId = randomUUID();
  const { awaited } = ctx.tables;
  await run(
    ctx.pool,
    'marking an awaited task',
    `WITH stale AS (DELETE FROM ${awaited} WHERE created_at < now() - interval '1 day')
INSERT INTO ${awaited} (task_id, waiter_id) VALUES ($1, $2)`,
    [taskId, waiterId],
  );
  return async () => {
    await run(ctx.pool, 'unmarking an awaited task', `DELETE FROM ${awaited} WHERE task_id = $1 AND waiter_id = $2`, [taskId, waiterId]).catch(() => undefined);
  };
}
