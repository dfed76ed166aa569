import { describeOnStore } from './describe-store.js';
import { stepFaultCases } from './step-cases.js';

await describeOnStore('mysql', 'durable step faults', (env) => stepFaultCases('mysql', env));
