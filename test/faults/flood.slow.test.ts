/**
 * The flood (FAULTS.md 17) on every store: 100,000 tasks submitted in bulk,
 * the claim's plan read at that size (it must use the claim index — the fast
 * check in test/store/conformance-plan.ts does it at a few thousand rows),
 * then two worker processes drain the backlog and every invariant holds.
 */
import { expect, it } from 'vitest';
import { TABLE_SCAN } from '../store/conformance-plan.js';
import { waitFor } from '../helpers/wait.js';
import { describeOnStore } from './describe-store.js';
import { DIALECTS } from './targets.js';

const FLOOD = Number(process.env.FLOOD ?? 100_000);

for (const dialect of DIALECTS) {
  await describeOnStore(dialect, 'flood', (env) => {
    it(`${FLOOD.toLocaleString('en')} tasks in bulk: the claim reads its index, two workers drain them, I1–I5 hold`, async () => {
      const submitted = Date.now();
      await env().submit(
        'work',
        Array.from({ length: FLOOD }, () => ({ ms: 0 })),
      );
      const submitMs = Date.now() - submitted;
      const { plan } = await env().store.explainClaim({ taskType: 'work' });
      expect(plan).toContain('ix_system_async_task_claim');
      expect(plan).not.toMatch(TABLE_SCAN);

      const started = Date.now();
      const workers = ['flood-a', 'flood-b'].map((label) => env().worker(label, ['work'], { concurrency: 32 }));
      await waitFor(async () => (await env().countStatus('SUCCESS')) === FLOOD, 'the flood to drain', 1_500_000, 1000);
      const drainMs = Date.now() - started;
      for (const w of workers) {
        await w.stop(120_000).catch((error: Error) => {
          throw new Error(`${error.message}\n${JSON.stringify(w.events.slice(-5))}\n${w.log.slice(-2000)}`);
        });
      }
      const report = await env().invariants();
      console.log(JSON.stringify({ dialect, submitMs, drainMs, perSecond: Math.round(FLOOD / (drainMs / 1000)), figures: report.figures }));
      expect(report).toMatchObject({ violations: [], knownGaps: [], figures: { executions: FLOOD, repeatedEffects: 0 } });
    }, 1_800_000);
  });
}
