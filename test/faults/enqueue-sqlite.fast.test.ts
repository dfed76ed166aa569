import { describeOnStore } from './describe-store.js';
import { enqueueRefusedCases } from './enqueue-cases.js';

await describeOnStore('sqlite', 'transactional enqueue', enqueueRefusedCases);
