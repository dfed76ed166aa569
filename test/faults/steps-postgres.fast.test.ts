import { describeOnStore } from './describe-store.js';
import { stepFaultCases } from './step-cases.js';

await describeOnStore('postgres', 'durable step faults', (env) => stepFaultCases('postgres', env));
