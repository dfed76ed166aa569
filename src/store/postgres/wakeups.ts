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
 * NOTIFY payloads must stay under 8000 bytes; senders fall back to the
 * wildcard or split id lists (see insert.ts, queries.ts).
 */
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import type { StoreEvent, StoreListener } from '../types.js';
import { run, type PgContext } from './connection.js';
import { quoteIdent } from './options.js';

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

export class PgListener {
  private readonly listeners = new Set<StoreListener>();
  private readonly waiters = new Set<OutcomeListener>();
  private client: pg.Client | null = null;
  private retryTimer: NodeJS.Timeout | null = null;
  private failures = 0;
  private started = false;
  private closed = false;
  private listeningNow = false;

  constructor(
    private readonly config: pg.ClientConfig,
    private readonly channel: string,
  ) {}

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
    void this.connect();
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.retryTimer) clearTimeout(this.retryTimer);
    this.retryTimer = null;
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
      if (message.channel === this.channel && message.payload !== undefined) this.deliverPayload(message.payload);
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
  }

  private lost(client: pg.Client): void {
    if (this.client !== client) return; // an old connection's late event
    this.client = null;
    this.listeningNow = false;
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
    let parsed: { k?: unknown; t?: unknown; i?: unknown };
    try {
      parsed = JSON.parse(payload) as typeof parsed;
    } catch {
      return; // not ours
    }
    if (parsed.k === 's' && Array.isArray(parsed.t)) this.deliver({ kind: 'submitted', taskTypes: parsed.t.map(String) });
    else if (parsed.k === 'c' && Array.isArray(parsed.i)) this.deliver({ kind: 'cancelRequested', taskIds: parsed.i.map(String) });
    else if (parsed.k === 'f' && Array.isArray(parsed.i)) this.deliverOutcomes(parsed.i.map(String));
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

/**
 * Marks `taskId` as awaited by one waiter (finish.ts NOTIFYs for it) and
 * answers the unmarking. Rows a crashed waiter left behind only cost a
 * spare NOTIFY for that task; those older than a day (the longest wait) go
 * with the next mark.
 */
export async function markAwaited(ctx: PgContext, taskId: string): Promise<() => Promise<void>> {
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
