import { onMysql } from '../helpers/mysql.js';
import { runAdaptiveSuite } from './suite.js';

await onMysql('test/adaptive/mysql.test.ts', 'Adaptive limits', runAdaptiveSuite);
