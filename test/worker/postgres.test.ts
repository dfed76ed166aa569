import { onPostgres } from '../helpers/postgres.js';
import { runWorkerSuite } from './suite.js';

await onPostgres('test/worker/postgres.test.ts', 'worker', runWorkerSuite);
