import { onPostgres } from '../helpers/postgres.js';
import { runRateSuite } from './suite.js';

await onPostgres('test/rates/postgres.test.ts', 'rates', runRateSuite);
