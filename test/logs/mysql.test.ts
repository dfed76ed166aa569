import { onMysql } from '../helpers/mysql.js';
import { runLogSuite } from './suite.js';

await onMysql('test/logs/mysql.test.ts', 'logs', runLogSuite);
