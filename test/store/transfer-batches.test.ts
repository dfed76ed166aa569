/** How an import splits its rows into statements (store/transfer.ts upsertBatches): by parameters and by text size. */
import { describe, expect, it } from 'vitest';
import { upsertBatches, type TransferRow } from '../../src/store/transfer.js';

describe('upsertBatches', () => {
  it('keeps each statement under the parameter limit', () => {
    const rows: TransferRow[] = Array.from({ length: 5000 }, (_, i) => ({ id: String(i) }));
    const batches = upsertBatches('tasks', rows);
    // 38 columns a task row: 789 rows keep a statement under 30,000 parameters.
    expect(batches.map((batch) => batch.length)).toEqual([789, 789, 789, 789, 789, 789, 266]);
    expect(batches.flat()).toEqual(rows);
  });

  it('keeps large payloads apart (MySQL max_allowed_packet), a row larger than the bound alone', () => {
    const big = 'x'.repeat(1_500_000);
    const rows: TransferRow[] = [
      { id: 'a', payload_json: big },
      { id: 'b', payload_json: big },
      { id: 'c', payload_json: 'x'.repeat(5_000_000) },
      { id: 'd', payload_json: '{}' },
    ];
    expect(upsertBatches('tasks', rows).map((batch) => batch.map((row) => row.id))).toEqual([['a', 'b'], ['c'], ['d']]);
  });
});
