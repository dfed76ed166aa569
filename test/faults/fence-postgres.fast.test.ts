import { describeOnStore } from './describe-store.js';
import { fenceFaultCases } from './fence-cases.js';

await describeOnStore('postgres', 'fencing tokens against a second database', (env) => fenceFaultCases(env));
