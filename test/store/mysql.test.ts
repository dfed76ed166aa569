import { onMysql } from '../helpers/mysql.js';
import { runStoreConformance } from './conformance.js';

await onMysql('test/store/mysql.test.ts', 'Store conformance', runStoreConformance);
