import { sqliteFactory } from '../helpers/sqlite.js';
import { runFenceSuite } from './fence-suite.js';

runFenceSuite(sqliteFactory);
