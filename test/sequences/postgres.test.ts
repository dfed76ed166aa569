import { onPostgres } from '../helpers/postgres.js';
import { runSequenceSuite } from './suite.js';

await onPostgres('test/sequences/postgres.test.ts', 'sequences', runSequenceSuite);
