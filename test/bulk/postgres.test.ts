import { onPostgres } from '../helpers/postgres.js';
import { runBulkSuite } from './suite.js';

await onPostgres('test/bulk/postgres.test.ts', 'bulk', runBulkSuite);
