import { onMysql } from '../helpers/mysql.js';
import { runEstimateSuite } from './suite.js';

await onMysql('test/estimate/mysql.test.ts', 'Start estimates', runEstimateSuite);
