import { describe, expect, it } from 'vitest';
import { FRESH_ONLY_BIT, STATUS_BITS, UNIQUE_HOLD_SQL, UNIQUE_STATUSES } from '../../src/store/rules/unique.js';

describe('uniqueness rules', () => {
  // The migrations index UNIQUE_HOLD_SQL as written: the bits the client stores must be the ones it tests.
  it('the indexed expression tests each status by the bit the client stores for it', () => {
    for (const status of UNIQUE_STATUSES) expect(UNIQUE_HOLD_SQL).toContain(`WHEN '${status}' THEN ${STATUS_BITS[status]} `);
    expect(UNIQUE_HOLD_SQL).toContain(`(unique_states & ${FRESH_ONLY_BIT}) = 0 OR attempt_count = 0`);
  });
});
