import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { parseTimestamptz } from '../../src/store/postgres/connection.js';

describe('the fast timestamptz parser', () => {
  const generic = pg.types.getTypeParser(1184, 'text');
  it.each([
    '2026-11-29 13:53:09.517318+00',
    '2026-11-29 13:53:09+00',
    '2026-11-29 13:53:09.5+00',
    '2026-11-29 13:53:09.999999+00',
    '2026-11-29 15:53:09.5+02',
    '2026-11-29 08:23:09.5-05:30',
    '0001-01-01 00:00:00+00',
    '0099-12-31 23:59:59+00',
    '2024-02-29 23:59:59.001+00',
    '1969-12-31 23:59:59.999+00',
    'infinity',
  ])('reads %s exactly as the generic parser does', (text) => {
    expect(String(parseTimestamptz(text))).toBe(String(generic(text)));
  });

  it('answers repeated texts from its cache with fresh, equal Dates', () => {
    const texts = Array.from({ length: 7 }, (_, i) => `2026-11-29 13:53:0${i}.${i}17318+00`);
    for (let round = 0; round < 3; round += 1) {
      for (const text of [...texts, texts[0]!, texts[0]!, texts[6]!]) expect(parseTimestamptz(text).getTime()).toBe((generic(text) as Date).getTime());
    }
    const first = parseTimestamptz(texts[6]!);
    first.setTime(0); // a caller mutating its Date must not change the next answer
    expect(parseTimestamptz(texts[6]!).getTime()).toBe((generic(texts[6]!) as Date).getTime());
  });
});
