import { describeOnStore } from './describe-store.js';
import { enqueueFaultCases } from './enqueue-cases.js';

await describeOnStore('postgres', 'transactional enqueue', enqueueFaultCases);
