import { sqliteFactory } from '../helpers/sqlite.js';
import { runMiddlewareSuite } from './suite.js';

runMiddlewareSuite(sqliteFactory);
