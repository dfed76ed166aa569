import { sqliteFactory } from '../helpers/sqlite.js';
import { runEventSuite } from './events-suite.js';

runEventSuite(sqliteFactory);
