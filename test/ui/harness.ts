/**
 * The dashboard's end-to-end rig: a real listening server (its own store, an
 * in-process worker for the tasks below, tokens for admin and two users) and
 * a real headless Chromium (Debian's, driven by playwright-core). Tests wait
 * on conditions in the page (locators, waitForFunction), never on sleeps.
 */
import { mkdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { CHROMIUM_TOOL } from '../helpers/system-tools.js';
import { randomBytes } from 'node:crypto';
import { defineTask, payloadEncryption, TaskFailure, TaskResult } from '../../src/index.js';
import { createServer, type TaskleaseServer } from '../../src/server/index.js';
import type { Store } from '../../src/store/types.js';
import { Gate } from '../server/harness.js';

export const SCREENSHOTS = fileURLToPath(new URL('./screenshots/', import.meta.url));
export const CHROMIUM = CHROMIUM_TOOL.name;

/** Test-controlled tasks: steps advance and holds end when the test says so; flaky fails while broken. */
export class Controls {
  readonly steps = new Gate();
  readonly holds = new Gate();
  broken = true;
  /** ui.snoozy snoozes its first run, then succeeds. */
  snoozed = false;
}

/** The key of ui.medical's payloads and results (id ui1): the viewer pastes it into the task page. */
export const UI_KEY = randomBytes(32);

export function uiTasks(controls: Controls) {
  return [
    defineTask<{ patient: string; mrn: string }>({ type: 'ui.medical', execute: (_ctx, record) => TaskResult.success({ result: { imported: record.mrn } }) }),
    defineTask({ type: 'ui.quick', execute: () => ({ status: 'SUCCESS', result: { ok: true } }) }),
    defineTask({
      type: 'ui.steps',
      execute: async (ctx) => {
        for (let step = 1; step <= 4; step++) {
          await Promise.race([controls.steps.pass(), aborted(ctx.signal)]);
          ctx.reportProgress({ total: 4, processed: step, message: `step ${step}` });
        }
        await Promise.race([controls.steps.pass(), aborted(ctx.signal)]);
      },
    }),
    defineTask({
      type: 'ui.snoozy',
      execute: () => {
        if (controls.snoozed) return TaskResult.success({});
        controls.snoozed = true;
        return TaskResult.snooze(50);
      },
    }),
    defineTask({
      type: 'ui.durable',
      execute: async (ctx) => {
        const fetched = await ctx.step('fetch-rows', () => ({ rows: 2 }));
        await ctx.step('store-rows', () => ({ stored: fetched.rows }));
      },
    }),
    defineTask({ type: 'ui.hold', execute: async (ctx) => void (await Promise.race([controls.holds.pass(), aborted(ctx.signal)])) }),
    defineTask({
      type: 'ui.flaky',
      maxAttempts: 1,
      execute: () => {
        if (controls.broken) throw new TaskFailure('the upstream service refused the request', { code: 'UPSTREAM_REFUSED', retryable: false });
        return { status: 'SUCCESS', result: { fixed: true } };
      },
    }),
  ];
}

function aborted(signal: AbortSignal): Promise<never> {
  return new Promise((_resolve, reject) => signal.addEventListener('abort', () => reject(signal.reason), { once: true }));
}

export interface Rig {
  server: TaskleaseServer;
  url: string;
  controls: Controls;
  tokens: { admin: string; alice: string; bob: string };
  browser: Browser;
  /** A fresh browser context (its own cookies), logged in with the token when given. */
  open(token?: string, options?: { width?: number; height?: number; dark?: boolean }): Promise<{ context: BrowserContext; page: Page }>;
  close(): Promise<void>;
}

export async function startRig(store: Store): Promise<Rig> {
  const controls = new Controls();
  const server = await createServer({
    store,
    tasks: uiTasks(controls),
    middleware: [payloadEncryption({ keys: { ui1: UI_KEY }, types: ['ui.medical'] })],
    port: 0,
    logger: false,
    worker: {
      concurrency: 8,
      pollIntervalMs: 50,
      minPollIntervalMs: 10,
      heartbeatIntervalMs: 500,
      leaseMs: 10_000,
      progressFlushIntervalMs: 0,
      progressFlushThreshold: 1,
      recoveryIntervalMs: 0,
    },
    sse: { minPollMs: 50, maxPollMs: 300 },
  });
  const url = await server.listen();
  const mint = async (role: 'admin' | 'user', owner?: string) =>
    (await server.client.tokens.create({ name: owner ?? role, role, ...(owner ? { owner } : {}) })).token;
  const tokens = { admin: await mint('admin'), alice: await mint('user', 'alice'), bob: await mint('user', 'bob') };
  // Playwright starts Chromium with a fresh temporary --user-data-dir of its own each launch.
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
  mkdirSync(SCREENSHOTS, { recursive: true });
  return {
    server,
    url,
    controls,
    tokens,
    browser,
    async open(token, options = {}) {
      const context = await browser.newContext({
        viewport: { width: options.width ?? 1280, height: options.height ?? 860 },
        colorScheme: options.dark ? 'dark' : 'light',
      });
      const page = await context.newPage();
      await page.goto(`${url}/ui/`);
      if (token) await logIn(page, token);
      return { context, page };
    },
    async close() {
      await browser.close();
      await server.close();
    },
  };
}

export async function logIn(page: Page, token: string): Promise<void> {
  await page.getByLabel('API token').fill(token);
  await page.getByRole('button', { name: 'Log in' }).click();
  await page.getByRole('button', { name: 'Log out' }).waitFor();
}

export async function shoot(page: Page, name: string): Promise<void> {
  await page.screenshot({ path: `${SCREENSHOTS}${name}.png`, fullPage: true });
}
