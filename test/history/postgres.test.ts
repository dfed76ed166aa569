import { onPostgres } from '../helpers/postgres.js';
import { runHistorySuite } from './suite.js';

await onPostgres('test/history/postgres.test.ts', 'history', runHistorySuite);
