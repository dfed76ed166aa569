import { describeOnStore } from './describe-store.js';
import { sandboxFaultCases } from './sandbox-cases.js';

await describeOnStore('postgres', 'sandbox faults', (env) => sandboxFaultCases(env));
