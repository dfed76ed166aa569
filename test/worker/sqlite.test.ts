import { sqliteFactory } from '../helpers/sqlite.js';
import { runWorkerSuite } from './suite.js';

runWorkerSuite(sqliteFactory);
