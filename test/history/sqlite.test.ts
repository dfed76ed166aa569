import { sqliteFactory } from '../helpers/sqlite.js';
import { runHistorySuite } from './suite.js';

runHistorySuite(sqliteFactory);
