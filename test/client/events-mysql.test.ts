import { onMysql } from '../helpers/mysql.js';
import { runEventSuite } from './events-suite.js';

await onMysql('test/client/events-mysql.test.ts', 'events', runEventSuite);
