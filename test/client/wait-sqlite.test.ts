import { sqliteFactory } from '../helpers/sqlite.js';
import { runWaitSuite } from './wait-suite.js';

runWaitSuite(sqliteFactory);
