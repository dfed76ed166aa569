/**
 * Overview: polls the stats route every 2 s and draws, over the last 10
 * minutes, submitted / completed / failed per minute (differences of the
 * cumulative counts over a sliding minute), queue wait p50/p99, and running
 * against capacity; tiles for dead letters and backlog; a table per type.
 * The History card reads the queue history the processes write (GET
 * /stats/history) on arrival — so it neither starts empty nor resets on
 * reload — with 1 h / 24 h / 7 d ranges and a type selector, refreshed
 * every 30 s (a minute row is written when its minute closes).
 */
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import { admin, type HistorySeries, type Stats } from '../api.js';
import { clear, duration, every, guarded, h, typeLink } from '../dom.js';
import type { Page } from '../main.js';

const WINDOW_MS = 10 * 60_000;
const HISTORY_REFRESH_MS = 30_000;
const RANGES = ['1h', '24h', '7d'] as const;
const MINUTE = 60_000;

interface Sample {
  t: number;
  stats: Stats;
}

const done = (s: Stats): number => s.counts.SUCCESS + s.counts.PARTIAL_SUCCESS;
const total = (s: Stats): number => Object.values(s.counts).reduce((sum, n) => sum + n, 0);

/**
 * Tasks in the minute before a sample (since the page opened, when that is
 * shorter: a short span is not extrapolated). Counts only grow, except by
 * purge or replay, hence the floor at zero.
 */
function perMinute(samples: Sample[], at: number, read: (s: Stats) => number): number {
  const now = samples[at]!;
  let from = at;
  while (from > 0 && now.t - samples[from - 1]!.t <= MINUTE) from -= 1;
  const then = samples[from]!;
  const span = now.t - then.t;
  return span <= 0 ? 0 : Math.max(0, ((read(now.stats) - read(then.stats)) / Math.max(span, MINUTE)) * MINUTE);
}

const AXIS_FONT = '12px system-ui, sans-serif';
const measure = document.createElement('canvas').getContext('2d');
/** A y-axis label's width in CSS pixels, in the axis font. */
function labelWidth(text: string): number {
  if (!measure) return text.length * 8;
  measure.font = AXIS_FONT;
  return measure.measureText(text).width;
}

function chart(title: string, series: { label: string; stroke: string }[], unit: string): { element: HTMLElement; plot: uPlot } {
  const element = h('figure', { class: 'card chart', 'data-chart': title }, h('figcaption', {}, title));
  const width = (): number => Math.max(260, Math.min(560, element.clientWidth - 24 || 520));
  // The widest label of the y axis's latest ticks: the ones uPlot draws.
  let widest = 0;
  let refits = 0;
  const plot = new uPlot(
    {
      width: width(),
      height: 180,
      legend: { live: false },
      // One sample (a live chart's first 2 s) would span years on a time axis: it gets the minute before it.
      scales: { x: { time: true, range: (_u, min, max) => (min === max && min !== null ? [min - 60, max] : [min, max]) } },
      axes: [
        { stroke: 'currentColor', grid: { stroke: 'rgba(128,128,128,0.2)' } },
        {
          stroke: 'currentColor',
          grid: { stroke: 'rgba(128,128,128,0.2)' },
          font: AXIS_FONT,
          // As wide as its longest label (a fixed 56 px clipped "1500 ms"): measured, plus the ticks and a gap.
          size: (_u, values) => {
            widest = Math.ceil(Math.max(0, ...(values ?? []).map(labelWidth)));
            return widest + 18;
          },
          values: (_u, ticks) => ticks.map((v) => `${v}${unit}`),
        },
      ],
      series: [{}, ...series.map((s) => ({ ...s, width: 2 }))],
      hooks: {
        // uPlot sizes its axes in at most three passes and draws the last pass's labels in the
        // previous pass's layout: when that pass widened the labels, lay the chart out once more. A
        // setSize to the same size does not redo the layout (uPlot then finds its axes converged and
        // keeps the stale plot area: seen stuck at 56 px for 49 px labels), so the refit goes through
        // a size one pixel narrower and back.
        draw: [
          (u) => {
            const shown = (u.axes[1] as { _show?: boolean })._show !== false;
            const plotLeft = Math.round(u.bbox.left / devicePixelRatio);
            // What the chart shows, readable without pixels (tests).
            element.dataset.yAxis = `${shown ? widest : 0}`;
            element.dataset.plotLeft = `${plotLeft}`;
            if (shown && plotLeft < widest + 18 && refits < 3) {
              refits += 1;
              const { width: w, height: ht } = u;
              queueMicrotask(() => {
                u.setSize({ width: w - 1, height: ht });
                u.setSize({ width: w, height: ht });
              });
            } else refits = 0;
          },
        ],
      },
    },
    [[], ...series.map(() => [])],
    element,
  );
  new ResizeObserver(() => plot.setSize({ width: width(), height: 180 })).observe(element);
  return { element, plot };
}

/**
 * The stored queue history (1 h / 24 h / 7 d) as a chart: of every type with a type selector (the Overview), or of
 * one type (a type's page). `refresh` reads it when the last read is HISTORY_REFRESH_MS old; a range picked reads it at once.
 */
export function historyChart(taskType?: string): { element: HTMLElement; refresh(): Promise<void>; offerTypes(types: string[]): void } {
  const history = chart(
    'History',
    [
      { label: 'submitted', stroke: '#3b82f6' },
      { label: 'succeeded', stroke: '#16a34a' },
      { label: 'failed', stroke: '#dc2626' },
      { label: 'dead-lettered', stroke: '#7c2d12' },
    ],
    '',
  );
  let range: (typeof RANGES)[number] = '1h';
  let historyType = taskType ?? '';
  let historyAt = 0;
  const rangeButtons = RANGES.map((r) =>
    h(
      'button',
      { type: 'button', class: r === range ? '' : 'secondary', 'data-range': r, 'aria-pressed': String(r === range), onclick: () => pick(r) },
      r.replace('h', ' h').replace('d', ' d'),
    ),
  );
  const typeSelect =
    taskType === undefined
      ? h(
          'select',
          { 'aria-label': 'History task type', onchange: () => ((historyType = typeSelect!.value), void guarded(load)) },
          h('option', { value: '' }, 'all types'),
        )
      : null;
  const pick = (r: (typeof RANGES)[number]): void => {
    range = r;
    for (const button of rangeButtons) {
      const on = button.dataset.range === r;
      button.className = on ? '' : 'secondary';
      button.setAttribute('aria-pressed', String(on));
    }
    void guarded(load);
  };
  const load = async (): Promise<void> => {
    historyAt = Date.now();
    const query = new URLSearchParams({ range, ...(historyType ? { taskType: historyType } : {}) });
    const series = await admin<HistorySeries>('GET', `/stats/history?${query}`);
    const xs = series.points.map((p) => Date.parse(p.at) / 1000);
    history.plot.setData([xs, ...(['submitted', 'succeeded', 'failed', 'deadLettered'] as const).map((k) => series.points.map((p) => p[k]))]);
    // What the chart shows, readable without pixels (tests): its points and their sums.
    history.element.dataset.points = String(xs.length);
    history.element.dataset.range = range;
    history.element.dataset.total = (['submitted', 'succeeded', 'failed', 'deadLettered'] as const)
      .map((k) => series.points.reduce((sum, p) => sum + (p[k] ?? 0), 0))
      .join(',');
  };
  history.element.insertBefore(h('div', { class: 'history-controls' }, ...rangeButtons, typeSelect), history.element.children[1] ?? null);
  return {
    element: history.element,
    refresh: async () => {
      if (Date.now() - historyAt >= HISTORY_REFRESH_MS) await load();
    },
    // The selector offers the types the cluster knows (kept as they come).
    offerTypes(types) {
      for (const type of types) if (typeSelect && ![...typeSelect.options].some((o) => o.value === type)) typeSelect.append(h('option', { value: type }, type));
    },
  };
}

export const overviewPage: Page = (root) => {
  const tiles = h('section', { class: 'tiles', 'aria-label': 'Now' });
  const throughput = chart(
    'Tasks per minute',
    [
      { label: 'submitted', stroke: '#3b82f6' },
      { label: 'completed', stroke: '#16a34a' },
      { label: 'failed', stroke: '#dc2626' },
    ],
    '',
  );
  const wait = chart(
    'Queue wait (last 5 min)',
    [
      { label: 'p50', stroke: '#8b5cf6' },
      { label: 'p99', stroke: '#f59e0b' },
    ],
    ' ms',
  );
  const active = chart(
    'Running vs capacity',
    [
      { label: 'running', stroke: '#0ea5e9' },
      { label: 'limit', stroke: '#64748b' },
      { label: 'backlog', stroke: '#f97316' },
    ],
    '',
  );
  const history = historyChart();
  const types = h('tbody');
  root.append(
    h('h1', {}, 'Overview'),
    tiles,
    h('section', { class: 'charts' }, history.element, throughput.element, wait.element, active.element),
    h(
      'section',
      { class: 'card' },
      h('h2', {}, 'Per type'),
      h(
        'div',
        { class: 'scroll' },
        h('table', {}, h('thead', {}, h('tr', {}, h('th', {}, 'type'), h('th', {}, 'running / limit'), h('th', {}, 'backlog'), h('th', {}, 'enabled'))), types),
      ),
    ),
  );
  const samples: Sample[] = [];
  return every(2000, async () => {
    await history.refresh();
    const stats = await admin<Stats>('GET', '/stats');
    history.offerTypes(stats.types.map((type) => type.taskType));
    const t = Date.now();
    samples.push({ t, stats });
    while (samples.length > 1 && t - samples[0]!.t > WINDOW_MS) samples.shift();
    const xs = samples.map((s) => s.t / 1000);
    const rates = [total, done, (s: Stats) => s.counts.FAILED].map((read) => samples.map((_s, i) => perMinute(samples, i, read)));
    throughput.plot.setData([xs, ...rates]);
    // What the chart shows, readable without pixels (tests, assistive tools).
    throughput.element.dataset.samples = String(xs.length);
    throughput.element.dataset.last = rates.map((r) => Math.round(r.at(-1) ?? 0)).join(',');
    wait.plot.setData([xs, samples.map((s) => s.stats.queueWait?.p50Ms ?? null), samples.map((s) => s.stats.queueWait?.p99Ms ?? null)] as uPlot.AlignedData);
    active.plot.setData([xs, samples.map((s) => s.stats.global.running), samples.map((s) => s.stats.global.limit), samples.map((s) => s.stats.backlog)]);
    const tile = (label: string, value: string, name: string) =>
      h('div', { class: 'card tile', 'data-tile': name }, h('span', { class: 'muted' }, label), h('strong', {}, value));
    clear(
      tiles,
      tile('Running', `${stats.global.running} / ${stats.global.limit}`, 'running'),
      tile('Backlog', String(stats.backlog), 'backlog'),
      tile('Dead letters', String(stats.deadLetters), 'dead-letters'),
      tile('Workers', `${stats.workers.live} (${stats.workers.concurrency} slots)`, 'workers'),
      tile('Queue wait p50 / p99', stats.queueWait ? `${duration(stats.queueWait.p50Ms)} / ${duration(stats.queueWait.p99Ms)}` : '—', 'queue-wait'),
      tile('Per minute (submitted)', String(Math.round(rates[0]!.at(-1) ?? 0)), 'submitted'),
    );
    clear(
      types,
      stats.types.map((type) =>
        h(
          'tr',
          { 'data-type': type.taskType },
          h('td', {}, typeLink(type.taskType)),
          h(
            'td',
            {},
            h('meter', { min: 0, max: type.limit, value: type.running, 'aria-label': `${type.running} of ${type.limit}` }),
            ` ${type.running} / ${type.limit}`,
          ),
          h('td', {}, type.backlog),
          h('td', {}, type.enabled ? 'yes' : 'no'),
        ),
      ),
    );
  });
};
