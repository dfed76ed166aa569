import { onMysql } from '../helpers/mysql.js';
import { runEditSuite } from './suite.js';

await onMysql('test/edit/mysql.test.ts', 'edit', runEditSuite);
