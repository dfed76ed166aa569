import { onPostgres } from '../helpers/postgres.js';
import { runUniqueSuite } from './unique-suite.js';

await onPostgres('test/client/unique-postgres.test.ts', 'uniqueness windows', runUniqueSuite);
