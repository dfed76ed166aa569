import { describeOnStore } from './describe-store.js';
import { workerFaultCases } from './worker-cases.js';

await describeOnStore('postgres', 'worker faults', (env) => workerFaultCases('postgres', env));
