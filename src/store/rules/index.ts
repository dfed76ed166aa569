/**
 * The business rules every store obeys, written once. A dialect calls these
 * functions (code that decides in JavaScript) or interpolates the SQL text
 * they render (statements that decide inside the database); it keeps only
 * what is truly its own: statement shapes, locking, batching and its
 * driver's error codes. Status names appear in dialect SQL only through
 * here (and the frozen migration texts, which record what was once applied).
 */
export * from './changes.js';
export * from './outcomes.js';
export * from './sql.js';
export * from './sweep.js';
export * from './fairness.js';
export * from './leases.js';
export * from './actions.js';
export * from './edits.js';
export * from './flows.js';
export * from './steps.js';
export * from './sequences.js';
export * from './rates.js';
export * from './logs.js';
export * from './search.js';
