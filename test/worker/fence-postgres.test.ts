import { onPostgres } from '../helpers/postgres.js';
import { runFenceSuite } from './fence-suite.js';

await onPostgres('test/worker/fence-postgres.test.ts', 'fence', runFenceSuite);
