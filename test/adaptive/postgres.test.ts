import { onPostgres } from '../helpers/postgres.js';
import { runAdaptiveSuite } from './suite.js';

await onPostgres('test/adaptive/postgres.test.ts', 'adaptive', runAdaptiveSuite);
