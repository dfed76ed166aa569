/**
 * The dashboard in a real headless Chromium against a real server: the same
 * scenarios on every database (sqlite.test.ts, postgres.test.ts). Every page
 * is screenshot into test/ui/screenshots/.
 */
import { randomUUID } from 'node:crypto';
import { createServer as createHttpServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { Store } from '../../src/store/types.js';
import { createClient } from '../../src/client/client.js';
import { defineTask } from '../../src/core/definition.js';
import { emptyCounts, historyStoreOf } from '../../src/store/queue-history.js';
import { CHROMIUM_TOOL, describeWithTools, systemTool } from '../helpers/system-tools.js';
import { waitFor } from '../helpers/wait.js';
import { shoot, startRig, UI_KEY, type Rig } from './harness.js';

export function dashboardSuite(name: string, factory: { create(): Promise<Store>; destroy(store: Store): Promise<void> }): void {
  const chromium = systemTool(CHROMIUM_TOOL, `test/ui/${name}.test.ts`);
  describeWithTools([chromium], 'chromium', `dashboard on ${name}`, () => {
    let store: Store;
    let rig: Rig;
    beforeAll(async () => {
      store = await factory.create();
      rig = await startRig(store);
    });
    afterAll(async () => {
      await rig?.close();
      if (store) await factory.destroy(store);
    });

    it('logs in with a token and the overview charts fill while tasks run', async () => {
      const { context, page } = await rig.open();
      await shoot(page, `${name}-login`);
      await page.getByLabel('API token').fill('tl_not-a-real-token');
      await page.getByRole('button', { name: 'Log in' }).click();
      await page
        .getByRole('alert')
        .filter({ hasText: /unknown, expired or revoked/ })
        .waitFor();
      await page.getByLabel('API token').fill(rig.tokens.admin);
      await page.getByRole('button', { name: 'Log in' }).click();
      await page.getByRole('heading', { name: 'Overview' }).waitFor();
      const throughput = page.locator('[data-chart="Tasks per minute"]');
      await waitFor(async () => Number(await throughput.getAttribute('data-samples')) >= 1, 'the first stats sample drawn');
      await rig.server.client.submitMany(Array.from({ length: 30 }, (_v, i) => ({ type: 'ui.quick', payload: { i } })));
      // submitted and completed per minute both rise above zero in the drawn series
      await waitFor(
        async () => {
          const [submitted = 0, completed = 0] = ((await throughput.getAttribute('data-last')) ?? '').split(',').map(Number);
          return submitted > 0 && completed > 0;
        },
        'submitted and completed per minute above zero in the chart',
        20_000,
      );
      expect(Number(await throughput.getAttribute('data-samples'))).toBeGreaterThanOrEqual(2);
      await page
        .locator('[data-tile="workers"] strong')
        .filter({ hasText: /^1 \(8 slots\)$/ })
        .waitFor();
      await page.locator('tr[data-type="ui.quick"]').waitFor();
      // every y axis is as wide as its widest label: the plot area starts right of the labels and their ticks
      for (const chart of await page.locator('[data-chart]').all()) {
        // Read together, in one turn of the page: a redraw between two reads can widen the labels.
        const layout = async () =>
          chart.evaluate((figure) => {
            const element = figure as unknown as { dataset: Record<string, string>; querySelector(s: string): { offsetLeft: number } | null };
            return { widest: Number(element.dataset.yAxis), plotLeft: element.querySelector('.u-over')?.offsetLeft ?? 0 };
          });
        let last = {};
        await waitFor(
          async () => {
            const seen = await layout();
            last = seen;
            return seen.plotLeft >= seen.widest + 15;
          },
          'the plot area to start right of the y axis labels',
          15_000,
          100,
        ).catch(async (error: Error) => {
          throw new Error(`${error.message} in "${String(await chart.getAttribute('data-chart'))}", last seen ${JSON.stringify(last)}`);
        });
      }
      await shoot(page, `${name}-overview`);
      await context.close();
    });

    it('the History chart reads the stored queue history on arrival and keeps its points across a reload', async () => {
      // Rows as two processes' recorders write them: 3 minutes of the last hour (the 1 h range).
      const history = await historyStoreOf(store);
      const minute = Math.floor((await store.now()).getTime() / 60_000) * 60_000;
      const counts = (submitted: number) => ({ ...emptyCounts(), submitted, succeeded: submitted });
      await history.add(
        'ui-p1',
        [1, 2, 3].map((back) => ({ minuteStart: new Date(minute - back * 60_000), taskType: 'ui.quick', counts: counts(back) })),
      );
      await history.add('ui-p2', [{ minuteStart: new Date(minute - 60_000), taskType: 'ui.quick', counts: counts(10) }]);
      const { context, page } = await rig.open(rig.tokens.admin);
      const chart = page.locator('[data-chart="History"]');
      const drawn = async () => [await chart.getAttribute('data-points'), (await chart.getAttribute('data-total'))?.split(',')[0]];
      // At least the 16 submitted above (the server's own recorder may add this test file's earlier minutes).
      await waitFor(async () => Number((await drawn())[1]) >= 16, 'the stored history drawn on arrival');
      const before = await drawn();
      expect(Number(before[0])).toBeGreaterThanOrEqual(60);
      await page.reload();
      await waitFor(async () => (await chart.getAttribute('data-total')) !== null, 'the history drawn again after the reload');
      // The same points (a minute that closed meanwhile may add the server's own counts, never take any away).
      const after = await drawn();
      expect(after[0]).toBe(before[0]);
      expect(Number(after[1])).toBeGreaterThanOrEqual(Number(before[1]));
      await page.locator('[data-range="7d"]').click();
      await waitFor(async () => (await chart.getAttribute('data-range')) === '7d', 'the 7 d range drawn');
      expect(Number((await drawn())[1])).toBeGreaterThanOrEqual(16);
      await context.close();
    });

    it('filters tasks, opens one, watches its progress bar move over SSE, and cancels it', async () => {
      const client = rig.server.client;
      const { task } = await client.submit('ui.steps', { video: 'intro.mp4' }, { owner: 'alice' });
      await client.submitMany([
        { type: 'ui.quick', payload: {} },
        { type: 'ui.quick', payload: {}, owner: 'alice' },
      ]);
      await waitFor(async () => (await client.get(task.id))?.status === 'RUNNING', 'the steps task runs');
      const { context, page } = await rig.open(rig.tokens.admin);
      await page.goto(`${rig.url}/ui/#/tasks`);
      await page.getByLabel('Type').fill('ui.steps');
      await page.getByLabel('Status').selectOption('RUNNING');
      await page.getByRole('button', { name: 'Filter' }).click();
      await page.locator(`tr[data-id="${task.id}"]`).waitFor();
      const statuses = await page.locator('tbody tr[data-status]').evaluateAll((rows) => rows.map((row) => row.getAttribute('data-status')));
      expect(statuses).toEqual(['RUNNING']);
      // the id's random end (its UUIDv7 start is the creation time, alike on every row), the payload and the last error
      const listed = page.locator(`tr[data-id="${task.id}"]`);
      expect(await listed.getByRole('link', { name: `…${task.id.slice(-8)}` }).getAttribute('href')).toBe(`#/tasks/${task.id}`);
      expect(await listed.locator('[data-payload]').textContent()).toBe('{"video":"intro.mp4"}');
      expect(await listed.locator('[data-error]').textContent()).toBe('—');
      await shoot(page, `${name}-tasks`);
      await page.locator(`tr[data-id="${task.id}"] a.mono`).click();
      await page.getByRole('heading', { name: /ui\.steps/ }).waitFor();
      await page.locator('[data-progress="none"]').waitFor();
      rig.controls.steps.release();
      await page.locator('[data-progress="25"]').waitFor();
      rig.controls.steps.release();
      await page.locator('[data-progress="50"]').waitFor();
      await page.locator('[data-diagnosis="RUNNING"]').waitFor();
      await shoot(page, `${name}-task`);
      expect(await page.getByRole('button', { name: 'Retry' }).count()).toBe(0);
      await page.getByRole('button', { name: 'Cancel' }).click();
      // two different words: the way back and the action (they were both "Cancel")
      expect(await page.locator('dialog button').allTextContents()).toEqual(['Go back', 'Cancel task']);
      await page.locator('dialog [data-confirm]').click();
      await page.locator('h1 .badge', { hasText: 'CANCELLED' }).waitFor({ timeout: 15_000 });
      expect((await client.get(task.id))?.status).toBe('CANCELLED');
      expect(await page.getByRole('button', { name: 'Cancel' }).count()).toBe(0);
      await context.close();
    });

    it('pauses then resumes a task from its page: both appear on its timeline, in time order, with who did them', async () => {
      const client = rig.server.client;
      const { task } = await client.submit('ui.quick', {}, { owner: 'alice', delayMs: 3_600_000 });
      const adminToken = (await client.tokens.list()).find((t) => t.name === 'admin')!;
      const { context, page } = await rig.open(rig.tokens.admin);
      await page.goto(`${rig.url}/ui/#/tasks/${task.id}`);
      await page.getByRole('heading', { name: /ui\.quick/ }).waitFor();
      await page.getByRole('button', { name: 'Pause' }).click();
      await page.locator('h1 .badge', { hasText: 'PAUSED' }).waitFor();
      await page.getByRole('button', { name: 'Resume' }).click();
      await page.locator('h1 .badge', { hasText: 'QUEUED' }).waitFor();
      const entries = page.locator('.timeline li');
      await page.locator('.timeline [data-action="RESUME"]').waitFor();
      const texts = (await entries.allTextContents()).map((text) => text.replace(/^.*?\s(?=submitted|paused|resumed)/, ''));
      expect(texts).toEqual(['submitted', 'paused by token:admin', 'resumed by token:admin']);
      expect(await page.locator('.timeline [data-action="PAUSE"] [data-actor]').getAttribute('title')).toBe(`token:${adminToken.id}`);
      await shoot(page, `${name}-task-actions`);
      await context.close();
      // The owner sees what was done and when, not which operator did it.
      const user = await rig.open(rig.tokens.alice);
      await user.page.goto(`${rig.url}/ui/#/tasks/${task.id}`);
      await user.page.locator('.timeline [data-action="RESUME"]').waitFor();
      expect(await user.page.locator('.timeline [data-action]').allTextContents()).toEqual(['paused', 'resumed']);
      await user.context.close();
      await client.requestCancellation(task.id);
    });

    it('edits a waiting task from its page: payload and priority saved, "edited" on its timeline', async () => {
      const client = rig.server.client;
      const { task } = await client.submit('ui.quick', { order: 1 }, { owner: 'alice', delayMs: 3_600_000 });
      const { context, page } = await rig.open(rig.tokens.alice);
      await page.goto(`${rig.url}/ui/#/tasks/${task.id}`);
      await page.getByRole('button', { name: 'Edit' }).click();
      const dialog = page.getByRole('dialog', { name: 'Edit task' });
      await dialog.getByLabel('Payload (JSON)').fill('{"order": 2}');
      await dialog.getByLabel('Priority').fill('5');
      await dialog.getByRole('button', { name: 'Save changes' }).click();
      await page.locator('.timeline [data-action="EDIT"]', { hasText: 'edited (payload, priority)' }).waitFor();
      expect(await client.get(task.id)).toMatchObject({ status: 'QUEUED', payload: { order: 2 }, priority: 5 });
      await shoot(page, `${name}-task-edited`);
      await context.close();
      await client.requestCancellation(task.id);
    });

    it('bulk actions on Tasks: selected rows paused after a dry-run count; all matching cancelled; the operations listed with who ran them', async () => {
      const client = rig.server.client;
      const tag = `bulk-${randomUUID().slice(0, 8)}`;
      const ids = (await client.submitMany([0, 1, 2, 3].map((i) => ({ type: 'ui.quick', payload: { tag, i }, owner: 'alice', delayMs: 3_600_000 })))).map(
        (r) => r.task.id,
      );
      const { context, page } = await rig.open(rig.tokens.admin);
      await page.goto(`${rig.url}/ui/#/tasks?type=ui.quick&payload=tag%3D${tag}`);
      for (const id of ids) await page.locator(`tr[data-id="${id}"]`).waitFor();
      await page.locator(`input[data-select="${ids[0]}"]`).check();
      await page.locator(`input[data-select="${ids[1]}"]`).check();
      const bar = page.getByRole('group', { name: 'Bulk actions' });
      await bar.getByRole('button', { name: 'Pause' }).click();
      const dialog = page.getByRole('dialog', { name: 'Confirm the bulk action' });
      await dialog.getByText('2 task(s) selected (QUEUED, RETRY_WAIT, BLOCKED) would be paused.').waitFor();
      await shoot(page, `${name}-bulk-confirm`);
      await dialog.getByRole('button', { name: 'Pause 2' }).click();
      await page.locator('.bulk-progress [data-bulk-progress]', { hasText: '2/2' }).filter({ hasText: 'SUCCEEDED' }).waitFor();
      expect(await Promise.all(ids.map(async (id) => (await client.get(id))!.status))).toEqual(['PAUSED', 'PAUSED', 'QUEUED', 'QUEUED']);
      // Every task matching the list's filter (the payload search included): a cancel takes paused and queued alike.
      await bar.getByLabel('Act on').selectOption('matching');
      await bar.getByRole('button', { name: 'Cancel' }).click();
      await dialog.getByText('4 task(s) matching the filter').waitFor();
      await dialog.getByRole('button', { name: 'Cancel 4' }).click();
      await page.locator('.bulk-progress [data-bulk-progress]', { hasText: '4/4' }).filter({ hasText: 'SUCCEEDED' }).waitFor();
      await waitFor(
        async () => (await Promise.all(ids.map(async (id) => (await client.get(id))!.status))).every((s) => s === 'CANCELLED'),
        'all four cancelled',
      );
      await page.goto(`${rig.url}/ui/#/bulk`);
      const rows = page.locator('table.bulk tbody tr[data-status="SUCCEEDED"]');
      await rows.filter({ hasText: tag }).first().waitFor();
      expect(await rows.filter({ hasText: tag }).count()).toBe(1); // the "all matching" one names the payload filter
      await shoot(page, `${name}-bulk-operations`);
      await context.close();
      // A user's bar offers only what a user may do over its own tasks.
      const user = await rig.open(rig.tokens.alice);
      await user.page.goto(`${rig.url}/ui/#/tasks`);
      const userBar = user.page.getByRole('group', { name: 'Bulk actions' });
      await userBar.getByRole('button', { name: 'Pause' }).waitFor();
      expect(await userBar.getByRole('button', { name: 'Retry' }).count()).toBe(0);
      await user.context.close();
    });

    it("a task type's page: claims paused and resumed, a limit saved, tasks by status, history, the oldest waiting task, failures by code", async () => {
      const client = rig.server.client;
      const broken = rig.controls.broken;
      rig.controls.broken = true;
      const { task: failed } = await client.submit('ui.flaky', { page: 'type' });
      await waitFor(async () => (await client.get(failed.id))?.status === 'FAILED', 'the failing task dead-lettered');
      rig.controls.broken = false;
      const history = await historyStoreOf(store);
      const minute = Math.floor((await store.now()).getTime() / 60_000) * 60_000;
      await history.add('ui-type', [{ minuteStart: new Date(minute - 120_000), taskType: 'ui.flaky', counts: { ...emptyCounts(), submitted: 7, failed: 2 } }]);
      const { context, page } = await rig.open(rig.tokens.admin);
      try {
        await page.goto(`${rig.url}/ui/#/types`);
        await page.locator('tr[data-type="ui.flaky"]').getByRole('link', { name: 'ui.flaky' }).click();
        await page.getByRole('heading', { name: 'ui.flaky', level: 1 }).waitFor();
        expect(await page.getByRole('navigation', { name: 'Pages', exact: true }).getByRole('link', { name: 'Types' }).getAttribute('aria-current')).toBe(
          'page',
        );
        const failedCount = (await client.counts({ taskType: 'ui.flaky' })).FAILED;
        await page
          .locator('[data-count="FAILED"]')
          .filter({ hasText: String(failedCount) })
          .waitFor();
        await page.locator('[data-failures] tr[data-code="UPSTREAM_REFUSED"]').waitFor();
        const chart = page.locator('[data-chart="History"]');
        await waitFor(async () => Number((await chart.getAttribute('data-total'))?.split(',')[0]) >= 7, 'the stored history of the type drawn');
        await page.locator('button[data-range="24h"]').click();
        expect(await page.locator('button[data-range="24h"]').getAttribute('aria-pressed')).toBe('true');
        await waitFor(async () => Number((await chart.getAttribute('data-points')) ?? 0) > 60, 'the 24 h range drawn (more points than an hour of minutes)');
        // Pause: a task of the type waits while one of another type, submitted after it, runs.
        await page.getByRole('button', { name: 'Pause type' }).click();
        await page.locator('[data-claims]', { hasText: 'claims paused' }).waitFor();
        expect((await client.policies.get('ui.flaky'))?.enabled).toBe(false);
        const { task: waiting } = await client.submit('ui.flaky', { page: 'type', waits: true });
        const { task: other } = await client.submit('ui.quick', {});
        await waitFor(async () => (await client.get(other.id))?.status === 'SUCCESS', 'a task of another type runs');
        expect((await client.get(waiting.id))?.status).toBe('QUEUED');
        // The page reads its analysis (the oldest waiting, failures by code) every 30 s and on arrival: arrive again.
        await page.reload();
        await page.locator('[data-oldest]', { hasText: 'Oldest task waiting: since' }).waitFor();
        await page.locator('[data-count="QUEUED"]').waitFor();
        await shoot(page, `${name}-type`);
        await page.getByRole('button', { name: 'Resume type' }).click();
        await page.locator('[data-claims]', { hasText: 'claims running' }).waitFor();
        await waitFor(async () => (await client.get(waiting.id))?.status === 'SUCCESS', 'the waiting task runs once resumed');
        // A limit saved on the type's page is the type's policy (the claims switch kept).
        await page.getByLabel('Max concurrency of ui.flaky').fill('3');
        await page.locator('tr[data-policy="ui.flaky"]').getByRole('button', { name: 'Save' }).click();
        await page.getByRole('status').filter({ hasText: 'Saved the ui.flaky policy' }).waitFor();
        expect(await client.policies.get('ui.flaky')).toMatchObject({ maxConcurrency: 3, enabled: true });
        await page.locator('tr[data-policy="ui.flaky"] [data-running]', { hasText: '/ 3' }).waitFor();
        // Its FAILED count links the Tasks list, filtered and on the FAILED tab.
        await page.locator('[data-count="FAILED"]').click();
        await page.getByRole('heading', { name: 'Tasks' }).waitFor();
        await page.locator(`tr[data-id="${failed.id}"]`).waitFor();
        expect(await page.locator('nav.tabs [data-tab="FAILED"]').getAttribute('aria-current')).toBe('page');
      } finally {
        rig.controls.broken = broken;
        await client.policies.reset('ui.flaky');
        // The dead letter made here is archived: the dead-letter test counts the type's waiting ones.
        const letters = await client.deadLetters.list({ taskType: 'ui.flaky' });
        await client.deadLetters.archive(letters.filter((letter) => letter.originalTaskId === failed.id).map((letter) => letter.id));
        await context.close();
      }
    });

    it('status tabs on Tasks count each status of the filter; a tab filters the list and keeps the other filters', async () => {
      const client = rig.server.client;
      const tag = `tabs-${randomUUID().slice(0, 8)}`;
      const later = { delayMs: 3_600_000 };
      const tasks = (await client.submitMany([0, 1, 2].map((i) => ({ type: 'ui.quick', payload: { tag, i }, ...later })))).map((r) => r.task);
      await client.pause(tasks[0]!.id);
      const { context, page } = await rig.open(rig.tokens.admin);
      await page.goto(`${rig.url}/ui/#/tasks?type=ui.quick`);
      const tabs = page.getByRole('navigation', { name: 'Task counts' });
      // The tabs show what the store counts (read again while the page redraws: tasks of other tests may still end).
      let seen = '';
      await waitFor(async () => {
        const counts = await client.counts({ taskType: 'ui.quick' });
        const expected = [
          `ALL ${Object.values(counts).reduce((sum, n) => sum + n, 0)}`,
          ...Object.entries(counts)
            .filter(([, n]) => n > 0)
            .map(([status, n]) => `${status} ${n}`),
        ];
        const tabs = await page
          .locator('nav.tabs a')
          .evaluateAll((links) => links.map((a) => `${(a as unknown as { dataset: { tab: string } }).dataset.tab} ${a.querySelector('.count')?.textContent}`));
        seen = JSON.stringify({ tabs, expected });
        return tabs.length === expected.length && expected.every((tab) => tabs.includes(tab));
      }, 'a tab per status with tasks, with its count').catch((error: Error) => {
        throw new Error(`${error.message}: ${seen}`);
      });
      expect(await tabs.locator('[data-tab="ALL"]').getAttribute('aria-current')).toBe('page');
      expect(await tabs.locator('[data-tab="PAUSED"]').count()).toBe(1);
      await shoot(page, `${name}-tasks-tabs`);
      await tabs.locator('[data-tab="PAUSED"]').click();
      await page.locator(`tr[data-id="${tasks[0]!.id}"]`).waitFor();
      expect(await tabs.locator('[data-tab="PAUSED"]').getAttribute('aria-current')).toBe('page');
      expect(page.url()).toContain('type=ui.quick');
      expect(new Set(await page.locator('tbody tr[data-id] .badge').allTextContents())).toEqual(new Set(['PAUSED']));
      expect(await page.locator(`tr[data-id="${tasks[1]!.id}"]`).count()).toBe(0);
      await tabs.locator('[data-tab="ALL"]').click();
      await page.locator(`tr[data-id="${tasks[1]!.id}"]`).waitFor();
      await context.close();
      for (const task of tasks) await client.requestCancellation(task.id);
    });

    it('under 600 px the page links fold behind a Menu button that opens them', async () => {
      const { context, page } = await rig.open(rig.tokens.admin, { width: 390, height: 800 });
      await page.getByRole('heading', { name: 'Overview' }).waitFor();
      const menu = page.getByRole('button', { name: 'Menu' });
      const nav = page.getByRole('navigation', { name: 'Pages', exact: true });
      expect(await menu.getAttribute('aria-expanded')).toBe('false');
      expect(await nav.isVisible()).toBe(false);
      await menu.click();
      expect(await menu.getAttribute('aria-expanded')).toBe('true');
      await nav.getByRole('link', { name: 'Types' }).waitFor();
      await shoot(page, `${name}-compact-nav`);
      await nav.getByRole('link', { name: 'Tasks' }).click();
      await page.getByRole('heading', { name: 'Tasks' }).waitFor();
      // The new page draws the menu closed; the links do not cover it.
      expect(await page.getByRole('button', { name: 'Menu' }).getAttribute('aria-expanded')).toBe('false');
      expect(await page.getByRole('navigation', { name: 'Pages', exact: true }).isVisible()).toBe(false);
      await context.close();
      // On a wide screen there is no Menu button; the links show.
      const wide = await rig.open(rig.tokens.admin);
      await wide.page.getByRole('heading', { name: 'Overview' }).waitFor();
      expect(await wide.page.getByRole('button', { name: 'Menu' }).isVisible()).toBe(false);
      expect(await wide.page.getByRole('navigation', { name: 'Pages', exact: true }).getByRole('link', { name: 'Types' }).isVisible()).toBe(true);
      await wide.context.close();
    });

    it('draws a flow as a live graph: layers, statuses, a wide layer as one summary node; the task page links its parents and children', async () => {
      const client = rig.server.client;
      const flow = await client.submitFlow({
        nodes: [
          { key: 'split', type: 'ui.hold', payload: {}, owner: 'alice' },
          ...Array.from({ length: 3 }, (_v, i) => ({ key: `part${i}`, type: 'ui.quick', payload: { i }, owner: 'alice', dependsOn: ['split'] })),
          { key: 'merge', type: 'ui.quick', payload: {}, owner: 'alice', dependsOn: ['part0', 'part1', 'part2'] },
          ...Array.from({ length: 60 }, (_v, i) => ({
            key: `audit${i}`,
            type: 'ui.quick',
            payload: { i },
            owner: 'alice',
            dependsOn: [{ key: 'merge', onParentFailure: 'CONTINUE' as const }],
          })),
        ],
      });
      await waitFor(async () => (await client.get(flow.tasks.split!.id))?.status === 'RUNNING', 'the split to run');
      const { context, page } = await rig.open(rig.tokens.alice);
      await page.goto(`${rig.url}/ui/#/flows/${flow.flowId}`);
      const graph = page.locator('.flow-graph');
      await graph.waitFor();
      expect(await graph.getAttribute('data-layers')).toBe('4');
      await page.locator(`[data-task="${flow.tasks.split!.id}"][data-status="RUNNING"]`).waitFor();
      expect(await page.locator('.node[data-status="BLOCKED"]').count()).toBe(4);
      // The 60 audits are one summary node, not 60 boxes.
      expect(await page.locator('.node.group').getAttribute('data-count')).toBe('60');
      expect(await page.locator('path.edge.continue').count()).toBeGreaterThan(0);
      await shoot(page, `${name}-flow-running`);
      // Live: the split ends, every node runs, the page redraws without a reload.
      rig.controls.holds.release();
      await page.locator(`[data-task="${flow.tasks.merge!.id}"][data-status="SUCCESS"]`).waitFor({ timeout: 20_000 });
      await page.locator('[data-count-status="SUCCESS"]', { hasText: '65' }).waitFor({ timeout: 20_000 });
      expect(await page.getByRole('button', { name: 'Cancel flow' }).count()).toBe(0);
      await shoot(page, `${name}-flow-done`);
      // A node links to its task page, which lists what it waited for and links back to the flow.
      await page.locator(`[data-task="${flow.tasks.merge!.id}"] a`).click();
      await page.getByRole('heading', { name: /ui\.quick/ }).waitFor();
      await page.locator('[data-flow-section] [data-parents="3"]').waitFor();
      expect(await page.locator('[data-flow-section] [data-children="60"]').count()).toBe(1);
      expect(await page.locator('[data-link][data-resolution="SUCCEEDED"]').count()).toBe(63);
      await page.locator('[data-flow-link]').click();
      await graph.waitFor();
      await context.close();
      // Another owner sees no such flow.
      const bob = await rig.open(rig.tokens.bob);
      await bob.page.goto(`${rig.url}/ui/#/flows/${flow.flowId}`);
      await bob.page.getByRole('heading', { name: 'Flow not found' }).waitFor();
      await bob.context.close();
    });

    it('shows the durable steps a task completed on its timeline, in order; its owner sees them without the worker', async () => {
      const client = rig.server.client;
      const { task } = await client.submit('ui.durable', {}, { owner: 'alice' });
      await waitFor(async () => (await client.get(task.id))?.status === 'SUCCESS', 'the durable task to succeed');
      const { context, page } = await rig.open(rig.tokens.admin);
      await page.goto(`${rig.url}/ui/#/tasks/${task.id}`);
      await page.getByRole('heading', { name: /ui\.durable/ }).waitFor();
      await page.locator('.timeline [data-step="store-rows"]').waitFor();
      const steps = await page.locator('.timeline [data-step]').allTextContents();
      expect(steps).toEqual([
        expect.stringMatching(/^step 1 fetch-rows completed by attempt 1 on \S+$/),
        expect.stringMatching(/^step 2 store-rows completed by attempt 1 on \S+$/),
      ]);
      // In time order among the other entries: after the attempt started, before it finished.
      const texts = await page.locator('.timeline li').allTextContents();
      const at = (pattern: RegExp) => texts.findIndex((text) => pattern.test(text));
      expect(at(/attempt 1 started/)).toBeLessThan(at(/step 1 fetch-rows/));
      expect(at(/step 2 store-rows/)).toBeLessThan(at(/finished SUCCESS/));
      await shoot(page, `${name}-task-steps`);
      await context.close();
      const user = await rig.open(rig.tokens.alice);
      await user.page.goto(`${rig.url}/ui/#/tasks/${task.id}`);
      await user.page.locator('.timeline [data-step="store-rows"]').waitFor();
      expect(await user.page.locator('.timeline [data-step]').allTextContents()).toEqual([
        'step 1 fetch-rows completed by attempt 1',
        'step 2 store-rows completed by attempt 1',
      ]);
      await user.context.close();
    });

    it('shows the lines a task logged (ctx.log) in its Logs section: time, attempt, level, message, redacted fields; to its owner too', async () => {
      const client = rig.server.client;
      const { task } = await client.submit('ui.durable', {}, { owner: 'alice' });
      await waitFor(async () => (await client.get(task.id))?.status === 'SUCCESS', 'the logging task to succeed');
      for (const token of [rig.tokens.admin, rig.tokens.alice]) {
        const { context, page } = await rig.open(token);
        await page.goto(`${rig.url}/ui/#/tasks/${task.id}`);
        const section = page.getByRole('region', { name: 'Logs' });
        await section.locator('tr[data-log-level="warn"]').waitFor();
        const rows = await section.locator('tbody tr').evaluateAll((trs) => trs.map((tr) => [...tr.querySelectorAll('td')].map((td) => td.textContent ?? '')));
        expect(rows.map((cells) => cells.slice(1))).toEqual([
          ['1', 'INFO', 'fetched rows', '{"rows":2,"apiKey":"[REDACTED]"}'],
          ['1', 'WARN', 'store was slow', '{"ms":1200}'],
        ]);
        for (const cells of rows) expect(cells[0]).not.toBe('');
        expect(await section.locator('time').first().getAttribute('datetime')).toMatch(/^\d{4}-\d\d-\d\dT/);
        if (token === rig.tokens.admin) await shoot(page, `${name}-task-logs`);
        await context.close();
      }
      // A task whose handler logged nothing says so.
      const { task: quiet } = await client.submit('ui.quick', {});
      await waitFor(async () => (await client.get(quiet.id))?.status === 'SUCCESS', 'the quiet task to succeed');
      const { context, page } = await rig.open(rig.tokens.admin);
      await page.goto(`${rig.url}/ui/#/tasks/${quiet.id}`);
      await page.locator('[data-logs="none"]').waitFor();
      await context.close();
    });

    it('one search box: an idempotency key lists its tasks (even a key shaped like an id), a task id opens the task', async () => {
      const client = rig.server.client;
      const idShapedKey = randomUUID();
      const { task: keyed } = await client.submit('ui.quick', {}, { idempotencyKey: idShapedKey, delayMs: 3_600_000 });
      const { task: plain } = await client.submit('ui.quick', {}, { idempotencyKey: 'invoice-1', delayMs: 3_600_000 });
      await client.submit('ui.quick', {}, { idempotencyKey: 'invoice-10', delayMs: 3_600_000 });
      const { context, page } = await rig.open(rig.tokens.admin);
      await page.goto(`${rig.url}/ui/#/tasks`);
      const search = page.getByLabel('Search by task id, idempotency key or payload field');
      const listedIds = () => page.locator('tbody tr[data-id]').evaluateAll((rows) => rows.map((row) => row.getAttribute('data-id')));
      await search.fill('invoice-1');
      await page.getByRole('button', { name: 'Search' }).click();
      await page.waitForURL(/idempotencyKey=invoice-1$/);
      await waitFor(async () => JSON.stringify(await listedIds()) === JSON.stringify([plain.id]), 'only the invoice-1 task listed');
      await search.fill(idShapedKey);
      await page.getByRole('button', { name: 'Search' }).click();
      await waitFor(async () => JSON.stringify(await listedIds()) === JSON.stringify([keyed.id]), 'the task with the id-shaped key listed');
      await search.fill(plain.id);
      await page.getByRole('button', { name: 'Search' }).click();
      await page.waitForURL(new RegExp(`#/tasks/${plain.id}$`));
      await page.getByRole('heading', { name: /ui\.quick/ }).waitFor();
      await context.close();
    });

    it('the search box filters by payload field (order.id=42, customer.name^="Ada L") and by key prefix (inv-*)', async () => {
      const client = rig.server.client;
      const tag = `t${Date.now()}`;
      const at = { delayMs: 3_600_000 };
      const { task: n42 } = await client.submit(
        'ui.quick',
        { tag, order: { id: 42 }, customer: { name: 'Ada Lovelace' } },
        { ...at, idempotencyKey: `${tag}-inv-1` },
      );
      const { task: s42 } = await client.submit('ui.quick', { tag, order: { id: '42' }, customer: { name: 'Ada' } }, { ...at, idempotencyKey: `${tag}-inv-2` });
      await client.submit('ui.quick', { tag, order: { id: 43 } }, { ...at, idempotencyKey: `${tag}-other` });
      const { context, page } = await rig.open(rig.tokens.admin);
      await page.goto(`${rig.url}/ui/#/tasks`);
      const search = page.getByLabel('Search by task id, idempotency key or payload field');
      const listed = async (): Promise<string> =>
        JSON.stringify((await page.locator('tbody tr[data-id]').evaluateAll((rows) => rows.map((row) => row.getAttribute('data-id')))).sort());
      const shows = (ids: string[], what: string) => waitFor(async () => (await listed()) === JSON.stringify([...ids].sort()), what);
      await search.fill(`tag=${tag} order.id=42`);
      await page.getByRole('button', { name: 'Search' }).click();
      await shows([n42.id], 'only the task whose order.id is the number 42');
      await search.fill(`tag=${tag} customer.name^="Ada L"`);
      await page.getByRole('button', { name: 'Search' }).click();
      await shows([n42.id], 'the Ada L… task');
      await search.fill(`${tag}-inv-*`);
      await page.getByRole('button', { name: 'Search' }).click();
      await shows([n42.id, s42.id], 'both inv- keys');
      // The search survives a reload (it is in the URL), and shows in the box.
      await page.reload();
      await shows([n42.id, s42.id], 'both inv- keys after a reload');
      expect(await search.inputValue()).toBe(`${tag}-inv-*`);
      await context.close();
    });

    it('a task page shows the unique key hold, the leases lost, the trace and a snoozed attempt in words', async () => {
      const client = rig.server.client;
      const { task: snoozy } = await client.submit('ui.snoozy', {}, { unique: { key: 'report-7' } });
      const { task: waiting } = await client.submit('ui.quick', {}, { unique: { key: 'report-8' }, delayMs: 3_600_000 });
      await waitFor(async () => (await client.get(snoozy.id))?.status === 'SUCCESS', 'the snoozed task to succeed');
      const { context, page } = await rig.open(rig.tokens.admin);
      await page.goto(`${rig.url}/ui/#/tasks/${snoozy.id}`);
      await page.locator('[data-outcome="SNOOZED"]').waitFor();
      await page.locator('.timeline li', { hasText: 'snoozed (asked to run later; no attempt spent)' }).waitFor();
      await page.locator('[data-unique="released"]', { hasText: 'while QUEUED, RUNNING' }).waitFor();
      await page.locator('[data-lease-expiries="0"]').waitFor();
      expect(await page.locator('[data-quarantined]').count()).toBe(0);
      await shoot(page, `${name}-task-snoozed`);
      await page.goto(`${rig.url}/ui/#/tasks/${waiting.id}`);
      await page.locator('[data-unique="held"]').waitFor();
      // A task whose worker keeps vanishing: two leases lost (claimed by a ghost, swept back) make it quarantined.
      const orphanType = defineTask({ type: 'ui.orphan' }); // no worker of the rig runs it
      const { task: orphan } = await createClient({ store, tasks: [orphanType] }).submit(orphanType, {});
      const ghostClaim = { workerId: 'ui-ghost', taskTypes: ['ui.orphan'], limit: 1, leaseMs: 1, globalConcurrency: 1000, typeConcurrency: 1000 };
      for (const expiries of [1, 2]) {
        await waitFor(async () => (await store.claimTasks(ghostClaim)).length === 1, 'the ghost to claim the orphan');
        await waitFor(async () => {
          await store.recover({ batchSize: 10 });
          return (await client.get(orphan.id))?.leaseExpiries === expiries;
        }, `lease expiry ${expiries} swept`);
      }
      await page.goto(`${rig.url}/ui/#/tasks/${orphan.id}`);
      await page.locator('[data-lease-expiries="2"] [data-quarantined]').waitFor();
      await shoot(page, `${name}-task-quarantined`);
      await client.requestCancellation(orphan.id);
      await context.close();
    });

    it('an encrypted task shows "encrypted" with its key id; the viewer\'s key opens payload and result in the page, a wrong one does not', async () => {
      const client = rig.server.client;
      const { task } = await client.submit('ui.medical', { patient: 'Grace Hopper', mrn: 'MRN-0042' });
      await waitFor(async () => (await client.get(task.id))?.status === 'SUCCESS', 'the encrypted import to succeed');
      const { context, page } = await rig.open(rig.tokens.admin);
      await page.goto(`${rig.url}/ui/#/tasks/${task.id}`);
      const payload = page.locator('[data-kind="payload"][data-sealed="ui1"]');
      await payload.waitFor();
      await page.locator('[data-kind="result"][data-sealed="ui1"]').waitFor();
      expect(await page.content()).not.toMatch(/Grace Hopper|MRN-0042/);
      await shoot(page, `${name}-task-encrypted`);
      await payload.getByLabel('key ui1').fill(Buffer.alloc(32, 7).toString('base64'));
      await payload.getByRole('button', { name: 'Open' }).click();
      await payload.getByText('does not open').waitFor();
      await payload.getByLabel('key ui1').fill(UI_KEY.toString('base64'));
      await payload.getByRole('button', { name: 'Open' }).click();
      // One key given opens both: the payload and the result sealed with it.
      await page.locator('[data-kind="payload"][data-opened="ui1"]').getByText('Grace Hopper').waitFor();
      await page.locator('[data-kind="result"][data-opened="ui1"]').getByText('MRN-0042').waitFor();
      await shoot(page, `${name}-task-decrypted`);
      await context.close();
    });

    it('replays a dead letter after the cause is fixed, and the replayed task succeeds', async () => {
      const client = rig.server.client;
      rig.controls.broken = true;
      const { task } = await client.submit('ui.flaky', { order: 42 });
      const { task: other } = await client.submit('ui.flaky', { order: 43 });
      await waitFor(async () => (await client.get(task.id))?.status === 'FAILED' && (await client.get(other.id))?.status === 'FAILED', 'the flaky tasks fail');
      const { context, page } = await rig.open(rig.tokens.admin);
      await page.goto(`${rig.url}/ui/#/dead-letters`);
      const row = page.locator(`tr[data-task="${task.id}"]`);
      await row.waitFor();
      await expect(row.textContent()).resolves.toMatch(/UPSTREAM_REFUSED/);
      await shoot(page, `${name}-dead-letters`);
      // each dead letter links to its task
      expect(await row.getByRole('link', { name: `…${task.id.slice(-8)}` }).getAttribute('href')).toBe(`#/tasks/${task.id}`);
      rig.controls.broken = false;
      await row.getByRole('button', { name: 'Replay' }).click();
      await page.locator('dialog [data-confirm]').click();
      await page.getByRole('status').filter({ hasText: 'Replayed 1' }).waitFor();
      const otherRow = page.locator(`tr[data-task="${other.id}"]`);
      // select all selects every waiting dead letter on the page, and clears them again
      const selectAll = page.getByRole('checkbox', { name: 'Select all waiting dead letters' });
      await selectAll.check();
      expect(await otherRow.getByRole('checkbox').isChecked()).toBe(true);
      expect(await page.getByRole('button', { name: 'Archive selected' }).isEnabled()).toBe(true);
      await selectAll.uncheck();
      expect(await otherRow.getByRole('checkbox').isChecked()).toBe(false);
      await otherRow.getByRole('checkbox').check();
      await page.getByRole('button', { name: 'Archive selected' }).click();
      await page.locator('dialog [data-confirm]').click();
      await page.getByRole('status').filter({ hasText: 'Archived 1' }).waitFor();
      await otherRow.getByText('archived').waitFor();
      expect(await client.deadLetters.size({ taskType: 'ui.flaky' })).toBe(0);
      await row.getByRole('link', { name: 'replayed' }).click();
      await page.locator('h1 .badge', { hasText: 'SUCCESS' }).waitFor({ timeout: 15_000 });
      expect((await client.get(task.id))?.status).toBe('SUCCESS');
      await context.close();
    });

    it('raising then lowering a type limit on Policies: the running count obeys, Workers shows DEGRADED when full', async () => {
      const client = rig.server.client;
      await client.submitMany(Array.from({ length: 12 }, (_v, i) => ({ type: 'ui.hold', payload: { i } })));
      const { context, page } = await rig.open(rig.tokens.admin);
      await page.goto(`${rig.url}/ui/#/policies`);
      const holdRow = page.locator('tr[data-policy="ui.hold"]');
      await holdRow.locator('[data-running]').filter({ hasText: '5 / 5' }).waitFor({ timeout: 15_000 });
      await holdRow.getByLabel('Max concurrency of ui.hold').fill('8');
      await holdRow.getByRole('button', { name: 'Save' }).click();
      await holdRow.locator('[data-running]').filter({ hasText: '8 / 8' }).waitFor({ timeout: 15_000 });
      await page.getByRole('link', { name: 'Workers' }).click();
      await page.locator('tr[data-health="DEGRADED"]').waitFor();
      await shoot(page, `${name}-workers`);
      await page.getByRole('link', { name: 'Policies' }).click();
      await holdRow.getByLabel('Max concurrency of ui.hold').fill('2');
      await holdRow.getByRole('button', { name: 'Save' }).click();
      await page.getByRole('status').filter({ hasText: 'Saved the ui.hold policy' }).waitFor();
      // The fields left empty (placeholder "default") keep the default: null, not 0 (no backoff).
      expect(await client.policies.get('ui.hold')).toMatchObject({ maxConcurrency: 2, maxAttempts: null, retryBaseDelayMs: null });
      for (let i = 0; i < 8; i++) rig.controls.holds.release(); // the 8 running end; new claims obey the limit
      await holdRow.locator('[data-running]').filter({ hasText: '2 / 2' }).waitFor({ timeout: 15_000 });
      await shoot(page, `${name}-policies`);
      const stats = await client.stats();
      expect(stats.types.find((t) => t.taskType === 'ui.hold')).toMatchObject({ running: 2, limit: 2 });
      expect((await client.list({ taskType: 'ui.hold', status: 'QUEUED' })).tasks).toHaveLength(2);
      for (let i = 0; i < 4; i++) rig.controls.holds.release();
      await waitFor(async () => (await client.list({ taskType: 'ui.hold', status: ['QUEUED', 'RUNNING'] })).tasks.length === 0, 'every hold task done');
      await context.close();
    });

    it('an adaptive type\'s policy row says "adaptive: 4 (2..9)" and why it holds, its trail follows; a task page shows its start estimate', async () => {
      const client = rig.server.client;
      await client.adaptive.set('ui.quick', { minLimit: 2, maxLimit: 9 });
      await client.adaptive.override('ui.quick', 4);
      // An attempt of the type finished just now: the type's bind has a pace to estimate from, so the task's due time
      // binds (without one, the type's bind is unknown and outweighs it — as after a slow earlier test on a loaded machine).
      const { task: paced } = await client.submit('ui.quick', {});
      await waitFor(async () => (await client.get(paced.id))?.status === 'SUCCESS', 'a ui.quick attempt to finish');
      const { task } = await client.submit('ui.quick', {}, { delayMs: 3_600_000 });
      try {
        const { context, page } = await rig.open(rig.tokens.admin);
        await page.goto(`${rig.url}/ui/#/policies`);
        const label = page.locator('tr[data-policy="ui.quick"] [data-adaptive="ui.quick"]');
        await label.filter({ hasText: 'adaptive: 4 (2..9), overridden until resumed' }).waitFor({ timeout: 15_000 });
        const trail = page.getByRole('region', { name: 'Adaptive limit changes' });
        await trail.locator('tr[data-change="override"]').filter({ hasText: '9 → 4' }).waitFor();
        await trail.locator('tr[data-change="set"]').waitFor();
        await shoot(page, `${name}-adaptive`);
        await page.goto(`${rig.url}/ui/#/tasks/${task.id}`);
        const card = page.locator('section[data-estimate="WAITING"]');
        await card.locator('tr[data-bind="type"]').waitFor({ timeout: 15_000 });
        expect(await card.locator('p.muted').textContent()).toContain('not due until');
        await context.close();
      } finally {
        await client.adaptive.disable('ui.quick');
        await client.policies.reset('ui.quick');
        await client.requestCancellation(task.id);
      }
    });

    it('adds, changes and removes an owner limit on Policies', async () => {
      const client = rig.server.client;
      const { context, page } = await rig.open(rig.tokens.admin);
      await page.goto(`${rig.url}/ui/#/policies`);
      const form = page.getByRole('form', { name: 'Add an owner limit' });
      await form.getByLabel('Owner', { exact: true }).fill('acme');
      await form.getByLabel('Owner max concurrency').fill('3');
      // visible labels, not only aria-labels
      expect(await form.locator('label').allTextContents()).toEqual(['Owner', 'Owner max concurrency']);
      await form.getByRole('button', { name: 'Save owner limit' }).click();
      const row = page.locator('tr[data-policy="OWNER:acme"]');
      await row.waitFor();
      expect(await client.policies.get({ owner: 'acme' })).toMatchObject({ maxConcurrency: 3, enabled: true });
      await row.getByLabel('Max concurrency of owner acme').fill('5');
      await row.getByRole('button', { name: 'Save' }).click();
      await page.getByRole('status').filter({ hasText: 'Saved the owner acme policy' }).waitFor();
      // The add above showed the same notice, so it is no sign of this save: wait for the stored value.
      await waitFor(async () => (await client.policies.get({ owner: 'acme' }))?.maxConcurrency === 5, 'the owner limit changed to 5');
      expect(await client.policies.get({ owner: 'acme' })).toMatchObject({ maxConcurrency: 5, enabled: true });
      await row.getByRole('button', { name: 'Remove' }).click();
      await page.locator('dialog [data-confirm]').click();
      await page.getByRole('status').filter({ hasText: 'Removed the owner acme policy' }).waitFor();
      expect(await client.policies.get({ owner: 'acme' })).toBeNull();
      await context.close();
    });

    it('adds a rate key limit, and sets and clears a type rate on Policies', async () => {
      const client = rig.server.client;
      const { context, page } = await rig.open(rig.tokens.admin);
      await page.goto(`${rig.url}/ui/#/policies`);
      const form = page.getByRole('form', { name: 'Add a rate key limit' });
      expect(await form.locator('label').allTextContents()).toEqual(['Rate key', 'Starts', 'Per (ms)']);
      await form.getByLabel('Rate key').fill('partner:*');
      await form.getByLabel('Starts').fill('100');
      await form.getByLabel('Per (ms)').fill('60000');
      await form.getByRole('button', { name: 'Save rate key limit' }).click();
      const keyRow = page.locator('tr[data-policy="KEY:partner:*"]');
      await keyRow.waitFor();
      expect(await client.policies.get({ rateKey: 'partner:*' })).toMatchObject({ rateLimit: 100, ratePeriodMs: 60_000 });
      const typeRow = page.locator('tr[data-policy="ui.hold"]');
      await typeRow.getByLabel('Rate limit of ui.hold').fill('10');
      await typeRow.getByLabel('Rate period (ms) of ui.hold').fill('2000');
      await typeRow.getByRole('button', { name: 'Save' }).click();
      await waitFor(async () => (await client.policies.get('ui.hold'))?.rateLimit === 10, 'the type rate saved');
      expect(await client.policies.get('ui.hold')).toMatchObject({ rateLimit: 10, ratePeriodMs: 2000 });
      const saved = page.locator('tr[data-policy="ui.hold"]');
      await waitFor(async () => (await saved.getByLabel('Rate limit of ui.hold').inputValue()) === '10', 'the row shows the rate');
      // The page re-renders its rows every few seconds when no field has focus: a re-render between the clearing and
      // the click would save the old rate again, so clear and save until it took.
      await waitFor(
        async () => {
          await saved.getByLabel('Rate limit of ui.hold').fill('');
          await saved.getByRole('button', { name: 'Save' }).click();
          return (await client.policies.get('ui.hold'))?.rateLimit === null;
        },
        'the type rate cleared',
        20_000,
        250,
      );
      await keyRow.getByRole('button', { name: 'Remove' }).click();
      await page.locator('dialog [data-confirm]').click();
      await page.getByRole('status').filter({ hasText: 'Removed the rate key partner:* policy' }).waitFor();
      expect(await client.policies.get({ rateKey: 'partner:*' })).toBeNull();
      await client.policies.reset('ui.hold');
      await context.close();
    });

    it('Schedules lists each schedule with its next runs; an admin disables and enables one', async () => {
      const client = rig.server.client;
      await client.schedules.save({ key: 'ui-nightly', taskType: 'ui.quick', cron: '0 3 * * *', timeZone: 'Asia/Kolkata', enabled: true });
      const { context, page } = await rig.open(rig.tokens.admin);
      await page.getByRole('link', { name: 'Schedules' }).click();
      await page.getByRole('heading', { name: 'Schedules' }).waitFor();
      const row = page.locator('tr[data-schedule="ui-nightly"]');
      await row.locator('[data-run]').nth(2).waitFor();
      // 03:00 in Kolkata is 21:30 UTC the day before, every day.
      const runs = await row.locator('[data-run]').evaluateAll((items) => items.map((item) => item.getAttribute('data-run')!));
      expect(runs.map((run) => new Date(run).toISOString().slice(11, 16))).toEqual(['21:30', '21:30', '21:30']);
      await shoot(page, `${name}-schedules`);
      await row.getByRole('button', { name: 'Disable' }).click();
      await page.locator('tr[data-schedule="ui-nightly"][data-enabled="false"]').waitFor();
      expect(await page.locator('tr[data-schedule="ui-nightly"] [data-run]').count()).toBe(0);
      expect((await client.schedules.get('ui-nightly'))?.enabled).toBe(false);
      await page.locator('tr[data-schedule="ui-nightly"]').getByRole('button', { name: 'Enable' }).click();
      await page.locator('tr[data-schedule="ui-nightly"][data-enabled="true"] [data-run]').first().waitFor();
      await client.schedules.delete('ui-nightly');
      await context.close();
    });

    it('Subscriptions lists each subscription; an admin adds one and removes it', async () => {
      const client = rig.server.client;
      await client.subscribe({ event: 'ui.order-placed', taskType: 'ui.quick', maxAttempts: 2 });
      const { context, page } = await rig.open(rig.tokens.admin);
      await page.getByRole('link', { name: 'Subscriptions' }).click();
      await page.getByRole('heading', { name: 'Subscriptions' }).waitFor();
      await page.locator('tr[data-subscription="ui.order-placed ui.quick"]').waitFor();
      const form = page.getByRole('form', { name: 'Add a subscription' });
      await form.getByLabel('Event').fill('ui.order-placed');
      await form.getByLabel('Task type').fill('ui.audit');
      await form.getByLabel('Priority').fill('5');
      await form.getByRole('button', { name: 'Subscribe' }).click();
      await page.getByRole('status').filter({ hasText: 'Subscribed ui.audit to ui.order-placed' }).waitFor();
      const added = page.locator('tr[data-subscription="ui.order-placed ui.audit"]');
      await added.waitFor();
      expect(await added.locator('td').allTextContents()).toEqual(expect.arrayContaining(['ui.audit', '5', '—']));
      expect((await client.listSubscriptions({ event: 'ui.order-placed' })).map((s) => [s.taskType, s.priority])).toEqual([
        ['ui.audit', 5],
        ['ui.quick', null],
      ]);
      await shoot(page, `${name}-subscriptions`);
      await added.getByRole('button', { name: 'Unsubscribe ui.audit on ui.order-placed' }).click();
      await page.locator('dialog [data-confirm]').click();
      await page.getByRole('status').filter({ hasText: 'Unsubscribed ui.audit on ui.order-placed' }).waitFor();
      await added.waitFor({ state: 'detached' });
      expect((await client.listSubscriptions({ event: 'ui.order-placed' })).map((s) => s.taskType)).toEqual(['ui.quick']);
      await client.unsubscribe({ event: 'ui.order-placed', taskType: 'ui.quick' });
      await context.close();
    });

    it('Sequences lists keys with waiting tasks; an operator skips a dead-lettered head and the next task runs', async () => {
      const client = rig.server.client;
      const key = `ui-seq-${Date.now()}`;
      const broken = rig.controls.broken;
      rig.controls.broken = true;
      const head = await client.submit('ui.flaky', {}, { sequenceKey: key });
      const next = await client.submit('ui.quick', {}, { sequenceKey: key });
      await waitFor(async () => (await client.get(head.task.id))?.status === 'FAILED', 'the head to fail for good', 20_000);
      const { context, page } = await rig.open(rig.tokens.admin);
      await page.getByRole('link', { name: 'Sequences' }).click();
      await page.getByRole('heading', { name: 'Sequences' }).waitFor();
      const row = page.locator(`tr[data-sequence="${key}"][data-blocked="true"]`);
      await row.waitFor();
      expect(await row.locator('td').allTextContents()).toEqual(expect.arrayContaining(['1', 'waits for an operator', 'BLOCK']));
      await page.getByLabel('Only keys waiting for an operator').check();
      await row.waitFor();
      await shoot(page, `${name}-sequences`);
      await row.getByRole('button', { name: `Skip the head of ${key}` }).click();
      await page.locator('dialog [data-confirm]').click();
      await page
        .getByRole('status')
        .filter({ hasText: `Skipped the head of ${key}` })
        .waitFor();
      await waitFor(async () => (await client.get(next.task.id))?.status === 'SUCCESS', 'the next task to run', 20_000);
      await row.waitFor({ state: 'detached' });
      rig.controls.broken = broken;
      await context.close();
    });

    it('a user sees only its own tasks, no admin pages, and no admin actions; the server refuses them anyway', async () => {
      const client = rig.server.client;
      const mine = (await client.submit('ui.quick', {}, { owner: 'alice', delayMs: 3_600_000 })).task;
      const bobs = (await client.submit('ui.quick', {}, { owner: 'bob', delayMs: 3_600_000 })).task;
      const { context, page } = await rig.open(rig.tokens.alice, { width: 390, height: 844 });
      await page.getByRole('heading', { name: 'Tasks' }).waitFor();
      await page.locator(`tr[data-id="${mine.id}"]`).waitFor();
      expect(await page.locator(`tr[data-id="${bobs.id}"]`).count()).toBe(0);
      const owners = await page.locator('tbody tr[data-id] td[data-owner]').allTextContents();
      expect(new Set(owners)).toEqual(new Set(['alice']));
      // A user sees its tasks, its sequence keys and its bulk operations (each page lists only its own; Sequences' actions are operators').
      // On a phone the links sit behind the Menu button.
      await page.getByRole('button', { name: 'Menu' }).click();
      expect(await page.getByRole('navigation', { name: 'Pages', exact: true }).getByRole('link').allTextContents()).toEqual(['Tasks', 'Sequences', 'Bulk']);
      expect(await page.getByLabel('Owner').count()).toBe(0);
      await shoot(page, `${name}-user-tasks-phone`);
      await page.goto(`${rig.url}/ui/#/policies`);
      await page.getByRole('heading', { name: 'Tasks' }).waitFor();
      await page.goto(`${rig.url}/ui/#/tasks/${bobs.id}`);
      await page.getByRole('heading', { name: 'Task not found' }).waitFor();
      await page.goto(`${rig.url}/ui/#/tasks/${mine.id}`);
      await page.getByRole('button', { name: 'Cancel' }).waitFor();
      expect(await page.getByRole('button', { name: 'Reschedule' }).count()).toBe(0);
      expect(await page.locator('[data-diagnosis]').count()).toBe(0);
      const answers = await page.evaluate(
        async ([bobId]) =>
          Promise.all([
            fetch('/api/admin/async-task/policies').then((r) => r.status),
            fetch(`/api/v1/tasks/${bobId}`).then((r) => r.status),
            fetch(`/api/v1/tasks/${bobId}/cancel`, { method: 'POST' }).then((r) => r.status),
            fetch('/api/admin/async-task/stats').then((r) => r.status),
          ]),
        [bobs.id],
      );
      expect(answers).toEqual([403, 404, 404, 403]);
      expect((await client.get(bobs.id))?.status).toBe('QUEUED');
      await context.close();
    });

    it('refuses a cross-site POST that carries the session cookie', async () => {
      const { task } = await rig.server.client.submit('ui.quick', {}, { delayMs: 3_600_000 });
      // Another origin on the same host (another port): same-site, so the SameSite cookie goes along; the origin check must stop it.
      const attacker = await serve(
        `<form id="f" method="POST" action="${rig.url}/api/v1/tasks/${task.id}/cancel"></form><script>document.getElementById('f').submit()</script>`,
      );
      const { context, page } = await rig.open(rig.tokens.admin, { dark: true });
      await page.goto(`${rig.url}/ui/#/tasks/${task.id}`);
      await page.getByRole('heading', { name: /ui\.quick/ }).waitFor();
      await shoot(page, `${name}-task-dark`);
      try {
        await page.goto(attacker.url);
        await page.waitForURL(/\/cancel$/);
        await page.getByText('cross-site request refused').waitFor();
        expect((await rig.server.client.get(task.id))?.status).toBe('QUEUED');
      } finally {
        await new Promise((resolve) => attacker.server.close(resolve));
        await context.close();
      }
    });
  });
}

async function serve(html: string): Promise<{ server: Server; url: string }> {
  const server = createHttpServer((_request, response) => response.writeHead(200, { 'content-type': 'text/html' }).end(html));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/` };
}
