import { sqliteFactory } from '../helpers/sqlite.js';
import { runStoreConformance } from './conformance.js';

runStoreConformance(sqliteFactory);
