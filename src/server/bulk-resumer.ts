/**
 * The server's part in bulk operations (client/bulk.ts): every few seconds
 * it looks for operations no live process holds — their process crashed or
 * stopped — and goes on with them from their saved cursor, one at a time. On
 * close it stops the operations it runs after their current batch and hands
 * them back, so that another server goes on at once.
 */
import type { FastifyBaseLogger } from 'fastify';
import type { TaskLeaseClient } from '../client/client.js';

export class BulkResumer {
  private timer: NodeJS.Timeout | null = null;
  private pass: Promise<void> | null = null;
  private readonly stopping = new AbortController();

  constructor(
    private readonly client: TaskLeaseClient,
    private readonly intervalMs: number,
    private readonly log: FastifyBaseLogger,
  ) {}

  start(): void {
    if (this.intervalMs === 0 || this.timer) return;
    this.timer = setInterval(() => this.tick(), this.intervalMs);
    this.timer.unref();
    this.tick();
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    this.stopping.abort();
    await this.client.bulk.stop();
    await this.pass;
  }

  private tick(): void {
    if (this.pass || this.stopping.signal.aborted) return;
    this.pass = this.client.bulk
      .resumeAbandoned({ signal: this.stopping.signal })
      .then((ids) => {
        if (ids.length > 0) this.log.info({ bulkOperations: ids }, 'tasklease: resumed bulk operations no live process held');
      })
      .catch((error: unknown) => this.log.warn({ err: error }, 'tasklease: looking for abandoned bulk operations failed; trying again'))
      .finally(() => {
        this.pass = null;
      });
  }
}
