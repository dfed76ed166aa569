import { onMysql } from '../helpers/mysql.js';
import { runRateSuite } from './suite.js';

await onMysql('test/rates/mysql.test.ts', 'rates', runRateSuite);
