import { databaseFaultCases } from './database-cases.js';
import { describeOnStore } from './describe-store.js';

await describeOnStore('postgres', 'database faults', databaseFaultCases, { ownServer: true });
