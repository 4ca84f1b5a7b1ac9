// The UI's benchmarks in a real browser (Debian's headless Chromium driven
// by playwright-core), run by `COOPR_UI_BENCH=1 go test -run
// TestBrowserBench ./ui/uitest`, which fills the store with 5,000 clusters
// and a 1,000-node job and moves the job's tasks when asked:
//
// 1. The cluster list's first page: a full navigation to /clusters, timed
//    with the page's own clock (performance.now() counts from the
//    navigation's start) to the moment the table holds its first page of
//    rows, and to the frame after it. Several loads; the median and worst.
// 2. The job view of the 1,000-node job while the Go side moves 1,000 tasks
//    a second for some seconds ("@@ need updates"): long tasks
//    (PerformanceObserver 'longtask', main-thread work over 50 ms) and the
//    longest one, the frames drawn, and whether the done count followed.
//
// It prints the numbers as "bench: ..." lines and fails only when a page
// does not show what it should: the numbers are for people to read.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { chromium } from 'playwright-core';

const env = (name) => {
  const v = process.env[name];
  if (!v)
    throw new Error(`${name} is not set: run this through COOPR_UI_BENCH=1 go test -run TestBrowserBench ./ui/uitest`);
  return v;
};
const base = env('COOPR_URL');
const shots = env('COOPR_SCREENSHOTS');
const alice = env('COOPR_ALICE_TOKEN');
const clusters = Number(env('COOPR_BENCH_CLUSTERS'));
const cluster = env('COOPR_BENCH_CLUSTER');
const job = env('COOPR_BENCH_JOB');
const tasks = Number(env('COOPR_BENCH_TASKS'));
const perSecond = Number(env('COOPR_BENCH_UPDATES'));
const seconds = Number(env('COOPR_BENCH_SECONDS'));
const loads = 7;

const answers = createInterface({ input: process.stdin })[Symbol.asyncIterator]();
async function need(action) {
  console.log(`@@ need ${action}`);
  const { value, done } = await answers.next();
  if (done) throw new Error(`no answer to ${action}`);
  if (value !== `@@ done ${action}`) throw new Error(`${action}: ${value}`);
}
const ms = (x) => `${Math.round(x)} ms`;
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

const userDataDir = mkdtempSync(join(tmpdir(), 'coopr-chromium-'));
const context = await chromium.launchPersistentContext(userDataDir, {
  executablePath: env('COOPR_CHROMIUM'),
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
  viewport: { width: 1280, height: 800 },
  colorScheme: 'light',
  reducedMotion: 'reduce',
});

let failed = false;
try {
  // Before any of the page's scripts: the long-task log, and the moment
  // the cluster table first holds a page of rows (a MutationObserver
  // callback runs before the next paint; the frame after it is when the
  // rows show).
  await context.addInitScript(() => {
    window.__long = [];
    new PerformanceObserver((l) => {
      for (const e of l.getEntries()) window.__long.push({ start: e.startTime, duration: e.duration });
    }).observe({ type: 'longtask', buffered: true });
    window.__frames = 0;
    const frame = () => {
      window.__frames++;
      requestAnimationFrame(frame);
    };
    requestAnimationFrame(frame);
    const want = Number(new URLSearchParams(location.search).get('first') ?? 25);
    const seen = new MutationObserver(() => {
      const rows = document.querySelectorAll('[data-testid="cluster-table"] tbody tr').length;
      if (rows >= want && window.__rows === undefined) {
        window.__rows = performance.now();
        requestAnimationFrame(() => (window.__shown = performance.now()));
        seen.disconnect();
      }
    });
    document.addEventListener('DOMContentLoaded', () =>
      seen.observe(document.body, { childList: true, subtree: true }),
    );
  });
  const page = context.pages()[0] ?? (await context.newPage());
  page.setDefaultTimeout(60_000);
  const errors = [];
  page.on('pageerror', (e) => errors.push(e.message));

  await page.goto(`${base}/clusters`);
  await page.getByLabel('API token').fill(alice);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.locator('[data-testid="cluster-table"] tbody tr').first().waitFor();

  // 1. The list's first page, each load a navigation as a person's reload.
  const rows = [];
  const shown = [];
  const fetches = [];
  for (let i = 0; i < loads; i++) {
    await page.goto(`${base}/clusters`);
    await page.waitForFunction(() => window.__shown !== undefined);
    const m = await page.evaluate(() => ({
      rows: window.__rows,
      shown: window.__shown,
      // The list's query: the first GraphQL request the page made.
      query: performance
        .getEntriesByType('resource')
        .filter((e) => e.name.endsWith('/graphql'))
        .map((e) => e.duration)[0],
    }));
    rows.push(m.rows);
    shown.push(m.shown);
    if (m.query !== undefined) fetches.push(m.query);
  }
  const count = await page.locator('[data-testid="cluster-table"] tbody tr').count();
  if (count < 25) throw new Error(`the list shows ${count} rows, not a page of 25`);
  await page.screenshot({ path: join(shots, 'bench-list.png') });
  console.log(
    `bench: cluster list, ${clusters} clusters, first page of 25 after navigation (${loads} loads): ` +
      `rows in the DOM median ${ms(median(rows))}, max ${ms(Math.max(...rows))}; ` +
      `shown (next frame) median ${ms(median(shown))}, max ${ms(Math.max(...shown))}; ` +
      `the list's GraphQL request median ${ms(median(fetches))}`,
  );

  // 2. The 1,000-node job's view under 1,000 task updates a second.
  const t0 = Date.now();
  await page.goto(`${base}/clusters/${cluster}/jobs/${job}`);
  await page.getByTestId('job-done').waitFor();
  await page.waitForFunction(
    (n) => document.querySelector('[data-testid="job-done"]')?.textContent?.endsWith(`of ${n}`),
    tasks,
  );
  await page.locator('[data-connection="connected"]').waitFor();
  // Let the first render's work end before measuring.
  await page.waitForTimeout(2000);
  const load = await page.evaluate(() => ({
    long: window.__long.map((e) => e.duration),
    at: performance.now(),
    frames: window.__frames,
  }));
  console.log(
    `bench: job view, ${tasks} tasks, opened in ${ms(Date.now() - t0)}; while loading ${load.long.length} long tasks, ` +
      `longest ${ms(Math.max(0, ...load.long))}`,
  );
  const before = await page.getByTestId('job-done').textContent();
  await need('updates');
  // The last events are relayed and drawn: how long after the last update
  // the done count shows them all.
  const sentAt = Date.now();
  // What the server holds done, asked of the API as the page would (the
  // session's cookie): what the view must end showing. A transaction the
  // Go side sent may both start and complete a task, which ends in either
  // state, so the count is read, not predicted.
  const stored = () =>
    page.evaluate(async (id) => {
      const r = await fetch('/graphql', {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-coopr-csrf': '1' },
        body: JSON.stringify({
          query: 'query($id: ID!) { job(id: $id) { counts { complete skipped } } }',
          variables: { id },
        }),
      });
      const c = (await r.json()).data.job.counts;
      return c.complete + c.skipped;
    }, job);
  const shownDone = async () => Number((await page.getByTestId('job-done').textContent())?.split(' of ')[0]);
  let expected = await stored();
  while (Date.now() - sentAt < 30_000 && (await shownDone()) !== expected) {
    await page.waitForTimeout(250);
    expected = await stored();
  }
  const caughtUp = Date.now() - sentAt;
  const run = await page.evaluate((from) => {
    const long = window.__long.filter((e) => e.start >= from.at);
    return {
      long: long.map((e) => e.duration),
      blocked: long.reduce((s, e) => s + e.duration, 0),
      elapsed: performance.now() - from.at,
      frames: window.__frames - from.frames,
    };
  }, load);
  const after = await page.getByTestId('job-done').textContent();
  // What the view counted (lib/jobLive): task events applied, lags (and
  // snapshots) each asking for a read, full reads of the tasks, and rows
  // of those reads not applied because a later event had set the task.
  const counted = await page
    .getByTestId('job-done')
    .evaluate((e) => ({ ...e.dataset }))
    .catch(() => ({}));
  await page.screenshot({ path: join(shots, 'bench-job.png') });
  const done = Number(after?.split(' of ')[0]);
  console.log(
    `bench: job view under ${perSecond} task updates/s for ${seconds} s: ${run.long.length} long tasks, ` +
      `longest ${ms(Math.max(0, ...run.long))}, ${ms(run.blocked)} blocked in ${ms(run.elapsed)}; ` +
      `${Math.round((run.frames * 1000) / run.elapsed)} frames/s; done ${before} -> ${after}, ` +
      `all shown ${ms(caughtUp)} after the last update; the view counted ${JSON.stringify(counted)}`,
  );
  if (done !== expected)
    throw new Error(
      `the view shows ${done} tasks done 30 s after the last update, not ${expected}: ` +
        "it did not converge to the server's states (see the hub's dropped count above, and what the view counted)",
    );
  if (errors.length) throw new Error(`page errors: ${errors.join('; ')}`);
} catch (e) {
  failed = true;
  console.error(e);
  await context
    .pages()[0]
    ?.screenshot({ path: join(shots, 'bench-failed.png') })
    .catch(() => {});
} finally {
  await context.close();
  rmSync(userDataDir, { recursive: true, force: true });
}
process.exit(failed ? 1 : 0);
