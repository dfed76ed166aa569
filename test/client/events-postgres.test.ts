import { onPostgres } from '../helpers/postgres.js';
import { runEventSuite } from './events-suite.js';

await onPostgres('test/client/events-postgres.test.ts', 'events', runEventSuite);
