import { sqliteFactory } from '../helpers/sqlite.js';
import { runSearchSuite } from './suite.js';

runSearchSuite(sqliteFactory);
