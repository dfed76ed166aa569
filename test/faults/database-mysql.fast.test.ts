import { databaseFaultCases } from './database-cases.js';
import { describeOnStore } from './describe-store.js';

await describeOnStore('mysql', 'database faults', databaseFaultCases, { ownServer: true });
