import { describeOnStore } from './describe-store.js';
import { flowFaultCases } from './flow-cases.js';

await describeOnStore('sqlite', 'flow faults', (env) => flowFaultCases(env));
