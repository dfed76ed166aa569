import { onMysql } from '../helpers/mysql.js';
import { runUniqueSuite } from './unique-suite.js';

await onMysql('test/client/unique-mysql.test.ts', 'uniqueness windows', runUniqueSuite);
