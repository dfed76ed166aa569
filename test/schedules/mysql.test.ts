import { onMysql } from '../helpers/mysql.js';
import { runScheduleSuite } from './suite.js';

await onMysql('test/schedules/mysql.test.ts', 'Periodic tasks', runScheduleSuite);
