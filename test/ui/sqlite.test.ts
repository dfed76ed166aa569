import { sqliteFactory } from '../helpers/sqlite.js';
import { dashboardSuite } from './suite.js';

dashboardSuite('sqlite', sqliteFactory);
