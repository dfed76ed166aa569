/** The lease renewal success-rate window: a share of the renewals inside it, older ones forgotten. */
import { describe, expect, it } from 'vitest';
import { RenewalWindow } from '../../src/observe/renewal-window.js';
import { createMetrics } from '../../src/observe/metrics.js';

describe('RenewalWindow', () => {
  it('is the share of renewals kept within the window, 1 when none was attempted', () => {
    let now = 0;
    const window = new RenewalWindow(60_000, () => now);
    expect(window.rate()).toBe(1);
    window.record(10, 10);
    now = 30_000;
    window.record(10, 8);
    window.record(0, 0); // an empty heartbeat changes nothing
    expect(window.rate()).toBe(18 / 20);
    now = 60_001; // the first batch has left the window
    expect(window.rate()).toBe(8 / 10);
    now = 90_001;
    expect(window.rate()).toBe(1);
  });

  it('rejects a window under one second, naming the field', () => {
    expect(() => createMetrics({ renewalRateWindowMs: 10 })).toThrow(/renewalRateWindowMs/);
  });
});
