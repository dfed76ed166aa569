import { onMysql } from '../helpers/mysql.js';
import { runHistorySuite } from './suite.js';

await onMysql('test/history/mysql.test.ts', 'history', runHistorySuite);
