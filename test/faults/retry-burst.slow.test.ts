/** FAULTS.md 15 on every store (lease-keeping-cases.ts): in npm run test:faults, with the load it ran at printed. */
import { describeOnStore } from './describe-store.js';
import { retryBurstCase } from './lease-keeping-cases.js';

for (const dialect of ['sqlite', 'postgres', 'mysql'] as const) await describeOnStore(dialect, 'a burst of failures', retryBurstCase);
