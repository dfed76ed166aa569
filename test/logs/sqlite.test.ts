import { sqliteFactory } from '../helpers/sqlite.js';
import { runLogSuite } from './suite.js';

runLogSuite(sqliteFactory);
