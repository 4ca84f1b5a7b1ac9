// A plain user's work in a real browser (Debian's headless Chromium driven
// by playwright-core): preview and create a cluster, watch its job live,
// open a task's live output and a failed attempt's error, scale and
// delete, each previewed; another user cannot see the cluster. Run it
// through `go test -run TestBrowserUserFlows ./ui/uitest`, which starts the
// server, the example catalog and an agent whose drivers pace the tasks of
// clusters named ui-… and fail the first START of web.
//
// It asks the Go side to change things on the server by printing
// "@@ need ACTION" and reading "@@ done ACTION" (or "@@ fail WHY") from
// stdin. Every view is checked with axe-core (no serious or critical
// violation) and saved as a screenshot in $COOPR_SCREENSHOTS; any
// Content-Security-Policy violation or uncaught page error fails the run.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { chromium } from 'playwright-core';

const env = (name) => {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set: run this through go test ./ui/uitest`);
  return v;
};
const base = env('COOPR_URL');
const shots = env('COOPR_SCREENSHOTS');
const tokens = { alice: env('COOPR_ALICE_TOKEN'), bob: env('COOPR_BOB_TOKEN') };
const axeSource = readFileSync(new URL('../node_modules/axe-core/axe.min.js', import.meta.url), 'utf8');

// The Go side's answers, one line each.
const answers = createInterface({ input: process.stdin })[Symbol.asyncIterator]();
async function need(action) {
  console.log(`@@ need ${action}`);
  const { value, done } = await answers.next();
  if (done) throw new Error(`no answer to ${action}`);
  if (value !== `@@ done ${action}`) throw new Error(`${action}: ${value}`);
}

function check(ok, message) {
  if (!ok) throw new Error(message);
}

const started = Date.now();
const problems = [];
const a11yReport = [];

// The views README.md shows: with COOPR_README_SHOTS=DIR, each is also
// saved there as the browser window shows it.
const readmeShots = {
  '22-create-preview': { file: 'create-preview.png', show: 'cluster-preview' },
  '23-job-running': { file: 'job-view.png', show: 'top' },
  '27-cluster-page': { file: 'cluster-page.png', show: 'top' },
};

/** view saves a screenshot of the page and checks it with axe-core. */
async function view(page, name) {
  // Each step waited for what it shows; let transitions (menus, fades) end.
  await page.waitForTimeout(300);
  await page.screenshot({ path: join(shots, `${name}.png`), fullPage: true });
  const readme = readmeShots[name];
  if (process.env.COOPR_README_SHOTS && readme) {
    // The window from the page's top, or from the part worth showing.
    if (readme.show === 'top') await page.evaluate(() => window.scrollTo(0, 0));
    else await page.getByTestId(readme.show).evaluate((e) => e.scrollIntoView({ block: 'start' }));
    await page.waitForTimeout(200);
    await page.screenshot({ path: join(process.env.COOPR_README_SHOTS, readme.file) });
  }
  // Evaluated through DevTools, which the page's CSP does not govern: no
  // script tag, no exception to the policy.
  await page.evaluate(axeSource);
  const result = await page.evaluate(() =>
    // eslint-disable-next-line no-undef
    axe.run(document, { resultTypes: ['violations'] }),
  );
  for (const v of result.violations) {
    const where = v.nodes
      .slice(0, 3)
      .map((n) => {
        const c = v.id === 'color-contrast' ? n.any[0]?.data : undefined;
        return n.target.join(' ') + (c ? ` [${c.fgColor} on ${c.bgColor}: ${c.contrastRatio}]` : '');
      })
      .join(' | ');
    const line = `${name}: ${v.impact} ${v.id}: ${v.help} (${v.nodes.length} nodes: ${where})`;
    a11yReport.push(line);
    if (v.impact === 'serious' || v.impact === 'critical') problems.push(`accessibility: ${line}`);
  }
  console.log(
    `${((Date.now() - started) / 1000).toFixed(1)} s: view ${name}: screenshot, axe ${result.violations.length} violations`,
  );
}

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
  await context.addInitScript(() => {
    window.__csp = [];
    document.addEventListener('securitypolicyviolation', (e) =>
      window.__csp.push(`${e.violatedDirective} blocked ${e.blockedURI || 'inline'} (${e.sourceFile}:${e.lineNumber})`),
    );
  });
  const page = context.pages()[0] ?? (await context.newPage());
  page.setDefaultTimeout(20_000);
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  page.on('console', (m) => {
    if (m.type() === 'error' && /Content Security Policy|Refused to/.test(m.text()))
      problems.push(`console: ${m.text()}`);
  });
  const cspViolations = async () => {
    const v = await page.evaluate(() => window.__csp ?? []);
    for (const x of v) problems.push(`CSP violation: ${x}`);
    await page.evaluate(() => (window.__csp = []));
  };

  const signIn = async (token) => {
    await page.getByLabel('API token').fill(token);
    await page.getByRole('button', { name: 'Sign in' }).click();
  };
  const signOut = async () => {
    await page.getByTestId('user-menu').click();
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.waitForURL(/\/signin/);
  };
  const jobState = page.getByTestId('job-state');
  const waitJob = async (state, timeout = 90_000) => {
    await page.locator(`[data-testid="job-state"][data-state="${state}"]`).waitFor({ timeout });
  };

  // 1. Alice opens the create form from her list; the agent gets workers.
  await need('activate');
  await page.goto(`${base}/clusters`);
  await signIn(tokens.alice);
  await page.waitForURL(/\/clusters$/);
  // A second tab keeps the list open: the new cluster must appear in it live.
  const listTab = await context.newPage();
  listTab.on('pageerror', (e) => problems.push(`page error (list tab): ${e.message}`));
  await listTab.goto(`${base}/clusters`);
  await listTab.locator('[data-testid="cluster-table"] tbody tr').first().waitFor();
  await listTab.locator('[data-connection="connected"]').waitFor();
  await listTab.evaluate(() => (window.__notReloaded = true));
  await page.bringToFront();
  await page.getByRole('link', { name: 'New cluster' }).click();
  await page.waitForURL(/\/clusters\/new/);
  await page.getByRole('textbox', { name: /^Name/ }).waitFor();
  for (let i = 0; ; i++) {
    await page.getByRole('combobox', { name: 'Template' }).click();
    const option = page.getByRole('option', { name: 'web-cluster', exact: true });
    try {
      await option.waitFor({ timeout: 3000 });
      await option.click();
      break;
    } catch (e) {
      if (i === 4) throw e;
      console.log(
        `the template list did not open (${await page.evaluate(() => document.activeElement?.tagName)}); again`,
      );
    }
  }
  await page.getByRole('textbox', { name: /^Config/ }).waitFor();
  const config = await page.getByRole('textbox', { name: /^Config/ }).inputValue();
  check(config.includes('greeting'), `the template's config is not filled in: ${config}`);
  await page.getByRole('textbox', { name: /^Name/ }).fill('ui-web');
  await view(page, '20-create-form');

  // 2. A size the template refuses: the error sits by the field (or is the solver's explanation).
  await page.getByRole('textbox', { name: /^Size/ }).fill('1');
  await page.getByRole('button', { name: 'Preview' }).click();
  await page
    .locator('.mantine-InputWrapper-error, [data-testid="solver-explanation"], [role="alert"]')
    .first()
    .waitFor();
  await view(page, '21-create-refused');
  const refusal = await page
    .locator('.mantine-InputWrapper-error, [data-testid="solver-explanation"], [role="alert"]')
    .allTextContents();
  console.log(`size 1 refused: ${refusal.join(' | ')}`);

  // 3. Config that is not JSON is refused before anything is sent.
  await page.getByRole('textbox', { name: /^Size/ }).fill('3');
  await page.getByRole('textbox', { name: /^Config/ }).fill('{"web": ');
  await page.getByRole('button', { name: 'Preview' }).click();
  await page
    .getByText(/Not valid JSON/)
    .first()
    .waitFor();
  await page.getByRole('textbox', { name: /^Config/ }).fill(config);

  // 4. The preview: layout, plan by stage, room; then create, pinned to it.
  await page.getByRole('button', { name: 'Preview' }).click();
  await page.getByTestId('cluster-preview').waitFor();
  const layout = await page.getByTestId('layout-table').textContent();
  for (const want of ['lb', 'web', 'small', 'debian12'])
    check(layout.includes(want), `the layout lacks ${want}: ${layout}`);
  check((await page.getByTestId('plan-stages').textContent()).includes('stages'), 'no plan stages');
  check((await page.getByTestId('room-use').textContent()).includes('clusters'), 'no quota use');
  await view(page, '22-create-preview');
  // The plan as a graph: a box per action of a service in a stage, arrows
  // between them (React Flow, loaded on the click).
  await page.getByTestId('plan-stages').getByText('Graph', { exact: true }).click();
  await page.locator('[data-testid="plan-graph"] [data-plan-box]').first().waitFor();
  const boxes = await page
    .locator('[data-testid="plan-graph"] [data-plan-box]')
    .evaluateAll((es) => es.map((e) => e.getAttribute('data-plan-box')));
  const arrows = await page.locator('[data-testid="plan-graph"] .react-flow__edge').count();
  check(
    boxes.some((b) => /^create/i.test(b)) && boxes.some((b) => /^start web/i.test(b)),
    `the plan graph's boxes: ${boxes.join(', ')}`,
  );
  check(arrows >= boxes.length - 1, `the plan graph has ${boxes.length} boxes and only ${arrows} arrows`);
  console.log(`plan graph: ${boxes.length} boxes, ${arrows} arrows`);
  await page.getByTestId('plan-graph').scrollIntoViewIfNeeded();
  await view(page, '22b-create-plan-graph');
  await page.getByTestId('plan-stages').getByText('Stages', { exact: true }).click();
  await page.getByRole('button', { name: 'Create cluster' }).click();

  // 5. The live job view: tasks change state in place until ACTIVE.
  await page.waitForURL(/\/clusters\/[^/]+\/jobs\/[^/]+$/);
  const clusterId = page.url().split('/clusters/')[1].split('/')[0];
  await page.getByTestId('task-graph').waitFor();
  await listTab
    .locator(`tr[data-cluster-id="${clusterId}"]`)
    .waitFor({ timeout: 20_000 })
    .catch(() => {
      throw new Error('the new cluster did not appear live in the list open in another tab');
    });
  check(await listTab.evaluate(() => window.__notReloaded === true), 'the list tab reloaded');
  await listTab.close();
  console.log('the new cluster appeared live in a list open in another tab');
  const doneSeen = new Set();
  const sample = async () => doneSeen.add(await page.getByTestId('job-done').textContent());
  await sample();
  // The install of web streams output: open a running one and watch it.
  const install = page.locator('[data-group*="/INSTALL/web"]').first();
  await install.locator('button').first().click();
  const running = install.locator('[data-task][data-state="IN_PROGRESS"]').first();
  await running.waitFor({ timeout: 60_000 });
  await sample();
  await view(page, '23-job-running');
  await running.click();
  await page
    .getByTestId('live-log')
    .getByText(/install web: step \d+ of 40/)
    .waitFor({ timeout: 20_000 });
  await view(page, '24-job-task-live-output');
  await page.keyboard.press('Escape');
  await sample();
  // The first START of web fails; the failure stays listed with its output.
  await page.getByTestId('failed-tasks').waitFor({ timeout: 60_000 });
  await sample();
  await page.getByTestId('failed-tasks').locator('[data-task]').first().click();
  const failedAttempt = page.locator('[data-testid="task-detail"] [data-attempt="1"]');
  await failedAttempt.getByText('address already in use').waitFor({ timeout: 20_000 });
  check((await failedAttempt.textContent()).includes('start web: step 1 of 1'), 'the failed attempt lacks its output');
  check(
    (await failedAttempt.textContent()).includes('port 80 is taken'),
    'the failed attempt does not show its message',
  );
  await view(page, '25-job-failed-attempt');
  await page.keyboard.press('Escape');
  await waitJob('COMPLETE');
  await sample();
  check(doneSeen.size >= 3, `the done count did not move live: ${[...doneSeen]}`);
  check((await page.getByTestId('job-counts').textContent()).includes('complete'), 'the counts do not say complete');
  await view(page, '26-job-complete');

  // 6. The cluster page: ACTIVE, its nodes, services and jobs.
  await page.goto(`${base}/clusters/${clusterId}`);
  await page.getByRole('heading', { name: 'ui-web' }).waitFor();
  await page.getByText('ACTIVE').first().waitFor();
  await page.getByTestId('node-table').waitFor();
  check(
    (await page.locator('[data-testid="node-table"] tbody tr').count()) === 3,
    'the node table does not have 3 nodes',
  );
  check((await page.getByTestId('service-summary').textContent()).includes('running on'), 'no service states');
  check((await page.locator('[data-testid="job-table"] tbody tr').count()) >= 1, 'the job table lacks the create');
  // Each node says how to log in and the fingerprint of its pinned host key.
  const ssh = page.getByTestId('node-ssh').first();
  check((await ssh.textContent()).includes('ssh root@10.3.0.1'), `no SSH command: ${await ssh.textContent()}`);
  check(
    (await ssh.getByTestId('host-key').textContent()) === `ssh-ed25519 ${env('COOPR_HOST_KEY_FINGERPRINT')}`,
    `no host key fingerprint: ${await ssh.textContent()}`,
  );
  await ssh.getByRole('button', { name: 'Copy the SSH command' }).waitFor();
  await view(page, '27-cluster-page');

  // 7. Configure, previewed: the config changes path by path. This config
  // breaks web's CONFIGURE once, for good: the job fails; retry runs it again.
  await page.getByRole('button', { name: 'Operations' }).click();
  await page.getByRole('menuitem', { name: 'Configure', exact: true }).click();
  await page.getByRole('textbox', { name: /^Config changes/ }).fill('{"web": {"greeting": "break once"}}');
  await page.getByRole('button', { name: 'Preview' }).click();
  await page.getByTestId('config-changes').waitFor();
  check(
    (await page.getByTestId('config-changes').textContent()).includes('web.greeting'),
    'the config change is not listed',
  );
  await view(page, '28-configure-preview');
  await page.getByRole('button', { name: /^Run / }).click();
  await page.waitForURL(/\/jobs\//);
  await waitJob('FAILED');
  await page.getByTestId('failed-tasks').locator('[data-task][data-state="FAILED"]').first().click();
  await page.locator('[data-testid="task-detail"] [data-attempt="1"]').getByText('greeting rejected').waitFor();
  await view(page, '28b-job-failed');
  await page.keyboard.press('Escape');
  await page.getByRole('button', { name: 'Retry' }).click();
  await waitJob('COMPLETE');
  console.log('a failed configure job was retried to COMPLETE');
  await page.goto(`${base}/clusters/${clusterId}`);
  await page.getByTestId('node-table').waitFor();
  await page.getByText('ACTIVE').first().waitFor();

  // 8. Scale to 4, previewed, then watched to the end.
  await page.getByRole('button', { name: 'Scale' }).click();
  await page.getByRole('textbox', { name: /^Nodes/ }).fill('4');
  await page.getByRole('button', { name: 'Preview' }).click();
  await page.getByTestId('operation-preview').waitFor();
  check(
    (await page.getByTestId('operation-preview').textContent()).includes('1 node added'),
    'the scale preview adds no node',
  );
  await view(page, '29-scale-preview');
  await page.getByRole('button', { name: /^Run / }).click();
  await page.waitForURL(/\/jobs\//);
  // Paused, nothing more is dispatched; resumed, it runs to the end.
  await page.getByRole('button', { name: 'Pause' }).click();
  await waitJob('PAUSED');
  await view(page, '29b-job-paused');
  await page.getByRole('button', { name: 'Resume' }).click();
  await waitJob('COMPLETE');
  await page.goto(`${base}/clusters/${clusterId}`);
  await page.getByTestId('node-table').waitFor();
  await page.waitForFunction(() => document.querySelectorAll('[data-testid="node-table"] tbody tr').length === 4);
  await page.getByText('ACTIVE').first().waitFor();

  // 9. Bob sees neither the cluster nor its jobs.
  const jobHref = await page.locator('[data-testid="job-table"] a').first().getAttribute('href');
  await cspViolations();
  await signOut();
  await signIn(tokens.bob);
  await page.waitForURL(/\/clusters$/);
  await page.locator('[data-testid="cluster-table"] tbody tr').first().waitFor();
  const bobs = await page.locator('[data-testid="cluster-table"] tbody tr td:first-child a').allTextContents();
  check(!bobs.includes('ui-web'), `bob's list shows alice's cluster: ${bobs}`);
  await page.goto(`${base}/clusters/${clusterId}`);
  await page.getByText('No such cluster').waitFor();
  await page.goto(`${base}${jobHref}`);
  await page.getByText('No such job').waitFor();
  await view(page, '30-other-users-job');
  await signOut();

  // 10. Alice deletes it: the dialog lists the nodes that go.
  await signIn(tokens.alice);
  await page.waitForURL(/\/clusters$/);
  await page.goto(`${base}/clusters/${clusterId}`);
  await page.getByTestId('node-table').waitFor();
  await page.getByRole('button', { name: 'Delete' }).click();
  await page.getByTestId('delete-nodes').waitFor();
  check(
    (await page.locator('[data-testid="delete-nodes"] li').count()) === 4,
    'the delete dialog does not list 4 nodes',
  );
  await view(page, '31-delete-confirm');
  await page.getByRole('dialog').getByRole('button', { name: 'Delete cluster' }).click();
  await page.waitForURL(/\/jobs\//);
  await waitJob('COMPLETE');
  await page.goto(`${base}/clusters/${clusterId}`);
  await page.getByText('TERMINATED').first().waitFor({ timeout: 30_000 });
  await view(page, '32-cluster-terminated');
  await cspViolations();
  void jobState;
} catch (e) {
  failed = true;
  console.error(`FAIL: ${e.stack ?? e}`);
  const page = context.pages()[0];
  if (page) await page.screenshot({ path: join(shots, 'failure.png'), fullPage: true }).catch(() => {});
} finally {
  await context.close();
  rmSync(userDataDir, { recursive: true, force: true });
}
if (a11yReport.length > 0) console.log(`axe findings:\n  ${a11yReport.join('\n  ')}`);
if (problems.length > 0) {
  console.error(`problems:\n  ${problems.join('\n  ')}`);
  failed = true;
}
console.log(failed ? 'browser tests failed' : 'browser tests passed');
process.exit(failed ? 1 : 0);
