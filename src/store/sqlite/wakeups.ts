/**
 * Wake-ups on SQLite. In-process: the store publishes its own writes on a
 * LocalBus (base.ts). Cross-process: every commit, from any process on this
 * machine, appends to the database's -wal file. Watching that file lets an
 * idle worker claim at once what another process submitted, instead of at its
 * next poll (polling stays the fallback where fs.watch is not supported).
 * Our own commits fire it too; the store tells them apart (PRAGMA
 * data_version, store.ts).
 */
import { watch, type FSWatcher } from 'node:fs';
import { basename, dirname } from 'node:path';

export class WalWatcher {
  private watcher: FSWatcher | null = null;
  private pending = false;

  constructor(
    private readonly databasePath: string,
    private readonly onChange: () => void,
  ) {}

  start(): void {
    if (this.watcher) return;
    const wal = `${basename(this.databasePath)}-wal`;
    try {
      // The directory, not the file: the -wal file may not exist yet, and is recreated after checkpoints.
      this.watcher = watch(dirname(this.databasePath), { persistent: false }, (_event, name) => {
        if (name === wal) this.coalesce();
      });
      this.watcher.on('error', () => this.stop());
    } catch {
      this.watcher = null; // no watch support here: polling remains
    }
  }

  stop(): void {
    this.watcher?.close();
    this.watcher = null;
  }

  /** Many commits in one tick make one wake-up. */
  private coalesce(): void {
    if (this.pending) return;
    this.pending = true;
    setImmediate(() => {
      this.pending = false;
      this.onChange();
    });
  }
}
