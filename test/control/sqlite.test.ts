import { sqliteFactory } from '../helpers/sqlite.js';
import { runControlSuite } from './suite.js';

runControlSuite(sqliteFactory);
