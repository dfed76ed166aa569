import { onPostgres } from '../helpers/postgres.js';
import { runEditSuite } from './suite.js';

await onPostgres('test/edit/postgres.test.ts', 'edit', runEditSuite);
