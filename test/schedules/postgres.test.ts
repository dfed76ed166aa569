import { onPostgres } from '../helpers/postgres.js';
import { runScheduleSuite } from './suite.js';

await onPostgres('test/schedules/postgres.test.ts', 'Periodic tasks', runScheduleSuite);
