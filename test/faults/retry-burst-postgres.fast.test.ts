import { describeOnStore } from './describe-store.js';
import { retryBurstCases } from './retry-burst-cases.js';

await describeOnStore('postgres', 'a burst of failures', retryBurstCases);
