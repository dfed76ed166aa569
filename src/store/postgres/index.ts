export { PostgresStore, type PostgresTransaction } from './store.js';
export { quoteIdent, checkSchemaName, DEFAULT_SCHEMA, type PostgresStoreOptions } from './options.js';
export { MAX_TASK_TYPE_BYTES, MAX_OWNER_BYTES, MAX_IDEMPOTENCY_KEY_BYTES } from './encode.js';
