/** The payload search's validation and text form (core/search.ts), and the SQL path rendering's guard (store/rules/search.ts). */
import { describe, expect, it } from 'vitest';
import { checkKeyPrefix, parseFilterText, parseSearchPath, payloadConditions } from '../../src/core/search.js';
import { jsonPathLiteral, likePrefix, pgPathLiteral } from '../../src/store/rules/search.js';

describe('payload search filters', () => {
  it('reads <path>=<value>: JSON numbers, booleans and "quoted strings" typed, other text a string', () => {
    expect(parseFilterText('order.id=42', 'equals')).toEqual({ path: 'order.id', equals: 42 });
    expect(parseFilterText('order.id=-4.5e2', 'equals')).toEqual({ path: 'order.id', equals: -450 });
    expect(parseFilterText('order.id="42"', 'equals')).toEqual({ path: 'order.id', equals: '42' });
    expect(parseFilterText('paid=true', 'equals')).toEqual({ path: 'paid', equals: true });
    expect(parseFilterText('paid="true"', 'equals')).toEqual({ path: 'paid', equals: 'true' });
    expect(parseFilterText('customer.name=Ada Lovelace', 'equals')).toEqual({ path: 'customer.name', equals: 'Ada Lovelace' });
    expect(parseFilterText('note=a=b', 'equals')).toEqual({ path: 'note', equals: 'a=b' });
    expect(parseFilterText('zip=007', 'equals')).toEqual({ path: 'zip', equals: '007' });
    expect(parseFilterText('customer.name=42', 'prefix')).toEqual({ path: 'customer.name', prefix: '42' });
    expect(() => parseFilterText('=42', 'equals')).toThrow(expect.objectContaining({ code: 'SEARCH_PATH_INVALID' }));
    expect(() => parseFilterText('order.id', 'equals')).toThrow(expect.objectContaining({ code: 'SEARCH_PATH_INVALID' }));
  });

  it('validates paths strictly and values by type', () => {
    expect(parseSearchPath('a.b_c.d-e.0')).toEqual(['a', 'b_c', 'd-e', '0']);
    for (const bad of ['a..b', 'a.b.', "a'b", 'a"b', 'a\\b', 'a b', 'a.{b}', 'é', 'a.b.c.d.e.f.g.h.i', 42, null]) {
      expect(() => parseSearchPath(bad), String(bad)).toThrow(expect.objectContaining({ code: 'SEARCH_PATH_INVALID' }));
    }
    expect(payloadConditions([{ path: 'a.b', equals: false }])).toEqual([{ segments: ['a', 'b'], op: 'equals', value: false }]);
    expect(payloadConditions(undefined)).toEqual([]);
    for (const bad of [{ path: 'a', equals: Infinity }, { path: 'a', equals: [1] }, { path: 'a', prefix: 1 }, { path: 'a' }, 'a=1']) {
      expect(() => payloadConditions([bad]), JSON.stringify(bad)).toThrow(expect.objectContaining({ code: 'SEARCH_VALUE_INVALID' }));
    }
    expect(() => payloadConditions({ path: 'a', equals: 1 })).toThrow(expect.objectContaining({ code: 'SEARCH_VALUE_INVALID' }));
    expect(() => payloadConditions([{ path: 'a', equals: '\uD800' }])).toThrow(expect.objectContaining({ code: 'SEARCH_VALUE_INVALID' }));
    expect(checkKeyPrefix('inv-')).toBe('inv-');
    expect(() => checkKeyPrefix('x'.repeat(256))).toThrow(expect.objectContaining({ code: 'SEARCH_VALUE_INVALID', field: 'idempotencyKeyPrefix' }));
  });

  it('renders SQL paths from safe segments only, and escapes LIKE prefixes', () => {
    expect(jsonPathLiteral(['order', 'id'])).toBe(`'$."order"."id"'`);
    expect(pgPathLiteral(['order', 'id'])).toBe(`'{order,id}'`);
    expect(() => jsonPathLiteral(["a'"])).toThrow(/unsafe JSON path segment/);
    expect(() => pgPathLiteral(['a,b'])).toThrow(/unsafe JSON path segment/);
    expect(likePrefix('50%_off!')).toBe('50!%!_off!!%');
  });
});
