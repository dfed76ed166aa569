import { sqliteFactory } from '../helpers/sqlite.js';
import { runBulkSuite } from './suite.js';

runBulkSuite(sqliteFactory);
