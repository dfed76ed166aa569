import { onPostgres } from '../helpers/postgres.js';
import { runLogSuite } from './suite.js';

await onPostgres('test/logs/postgres.test.ts', 'logs', runLogSuite);
