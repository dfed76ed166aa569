/** Opens the SQLite file given and migrates it: the concurrent-start test runs several of these at once. */
import { SqliteStore } from '../../src/store/sqlite/store.js';

const store = new SqliteStore({ path: process.argv[2]!, busyTimeoutMs: 20_000 });
await store.migrate();
process.stdout.write(`${await store.schemaVersion()}\n`);
await store.close();
