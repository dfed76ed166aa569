import { sqliteFactory } from '../helpers/sqlite.js';
import { runEditSuite } from './suite.js';

runEditSuite(sqliteFactory);
