import { sqliteFactory } from '../helpers/sqlite.js';
import { runScheduleSuite } from './suite.js';

runScheduleSuite(sqliteFactory);
