import { onPostgres } from '../helpers/postgres.js';
import { runEstimateSuite } from './suite.js';

await onPostgres('test/estimate/postgres.test.ts', 'estimate', runEstimateSuite);
