import { onPostgres } from '../helpers/postgres.js';
import { runMoveSuite } from './move-suite.js';

await onPostgres('test/client/move-postgres.test.ts', 'move', runMoveSuite);
