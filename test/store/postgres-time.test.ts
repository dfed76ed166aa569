import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { parseTimestamptz } from '../../src/store/postgres/context.js';

describe('the fast timestamptz parser', () => {
  const generic = pg.types.getTypeParser(1184, 'text');
  it.each([
    '2026-11-29 13:53:09.517318+00', '2026-11-29 13:53:09+00', '2026-11-29 13:53:09.5+00', '2026-11-29 13:53:09.999999+00',
    '2026-11-29 15:53:09.5+02', '2026-11-29 08:23:09.5-05:30', '0001-01-01 00:00:00+00', '0099-12-31 23:59:59+00',
    '2024-02-29 23:59:59.001+00', '1969-12-31 23:59:59.999+00', 'infinity',
  ])('reads %s exactly as the generic parser does', (text) => {
    expect(String(parseTimestamptz(text))).toBe(String(generic(text)));
  });
});
