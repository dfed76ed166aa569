import { sqliteFactory } from '../helpers/sqlite.js';
import { runFlowSuite } from './suite.js';

runFlowSuite(sqliteFactory);
