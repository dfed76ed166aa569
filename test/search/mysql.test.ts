import { onMysql } from '../helpers/mysql.js';
import { runSearchSuite } from './suite.js';

await onMysql('test/search/mysql.test.ts', 'search', runSearchSuite);
