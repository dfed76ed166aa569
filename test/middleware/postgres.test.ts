import { onPostgres } from '../helpers/postgres.js';
import { runMiddlewareSuite } from './suite.js';

await onPostgres('test/middleware/postgres.test.ts', 'middleware', runMiddlewareSuite);
