// The UI in a real browser: Debian's headless Chromium driven by
// playwright-core, against the coopr server that ui/uitest (a Go test)
// starts with Postgres, Redis, an agent and the example catalog. Run it
// through `go test ./ui/uitest` (make test does); it reads the server's
// address and tokens from the environment that test sets.
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
const tokens = { admin: env('COOPR_ADMIN_TOKEN'), alice: env('COOPR_ALICE_TOKEN'), bob: env('COOPR_BOB_TOKEN') };
const aliceClusters = Number(env('COOPR_ALICE_CLUSTERS'));
const newestAliceCluster = env('COOPR_NEWEST_ALICE_CLUSTER');
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
const readmeShots = { '09-templates': 'template-gallery.png' };

/** view saves a screenshot of the page and checks it with axe-core. */
async function view(page, name) {
  // Each step waited for what it shows; let transitions (menus, fades) end.
  await page.waitForTimeout(300);
  await page.screenshot({ path: join(shots, `${name}.png`), fullPage: true });
  if (process.env.COOPR_README_SHOTS && readmeShots[name])
    await page.screenshot({ path: join(process.env.COOPR_README_SHOTS, readmeShots[name]) });
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
  const live = () => page.locator('[data-connection="connected"]').waitFor();
  const rows = page.locator('[data-testid="cluster-table"] tbody tr');

  // 1. Not signed in: every page leads to the sign-in page, which says
  // what is wrong with a bad token next to the field.
  await page.goto(`${base}/clusters`);
  await page.waitForURL(/\/signin\?next=%2Fclusters/);
  await view(page, '01-signin');
  await signIn('coopr_not-a-token');
  await page.getByText('That API token is not valid').waitFor();
  await view(page, '02-signin-bad-token');

  // 2. A plain user: her clusters, live, no admin navigation.
  await signIn(tokens.alice);
  await page.waitForURL(/\/clusters$/);
  await rows.first().waitFor();
  await live();
  check((await page.getByTestId('user-menu').textContent()).includes('alice'), 'the top bar does not name alice');
  check((await page.getByTestId('user-menu').textContent()).includes('acme'), 'the top bar does not name the tenant');
  check((await page.getByTestId('admin-nav').count()) === 0, 'a plain user sees the admin navigation');
  check((await page.getByRole('columnheader', { name: 'Owner' }).count()) === 0, 'a plain user sees the owner column');
  check((await rows.count()) === 25, `page 1 has ${await rows.count()} rows, want 25`);
  const names = await rows.locator('td:first-child a').allTextContents();
  check(names[0] === `alice-${String(aliceClusters).padStart(2, '0')}`, `newest first: the first row is ${names[0]}`);
  check(
    names.every((n) => n.startsWith('alice-')),
    `alice sees clusters that are not hers: ${names}`,
  );
  await view(page, '03-clusters-user');

  // 3. Paging through the cursors.
  await page.getByRole('button', { name: 'Next' }).click();
  await page.getByTestId('page-number').filter({ hasText: 'Page 2' }).waitFor();
  await page.waitForFunction(
    (n) => document.querySelectorAll('[data-testid="cluster-table"] tbody tr').length === n,
    aliceClusters - 25,
  );
  const page2 = await rows.locator('td:first-child a').allTextContents();
  check(
    page2.every((n) => !names.includes(n)),
    'page 2 repeats clusters of page 1',
  );
  check(await page.getByRole('button', { name: 'Next' }).isDisabled(), 'Next is enabled on the last page');
  await view(page, '04-clusters-page-2');
  await page.getByRole('button', { name: 'Previous' }).click();
  await page.getByTestId('page-number').filter({ hasText: 'Page 1' }).waitFor();

  // 4. Live: the agent gets workers, and the rows turn ACTIVE without a reload.
  const newest = page.locator(`tr[data-cluster-id="${newestAliceCluster}"]`);
  check(
    (await newest.getAttribute('data-status')) === 'PENDING',
    'the newest cluster is not PENDING before the agent works',
  );
  await page.evaluate(() => (window.__notReloaded = true));
  await need('activate');
  await page.locator(`tr[data-cluster-id="${newestAliceCluster}"][data-status="ACTIVE"]`).waitFor({ timeout: 60_000 });
  check(await page.evaluate(() => window.__notReloaded === true), 'the page reloaded');
  await page.waitForFunction(
    () => document.querySelectorAll('[data-testid="cluster-table"] tbody tr[data-status="PENDING"]').length === 0,
    null,
    {
      timeout: 60_000,
    },
  );
  await view(page, '05-clusters-live-active');

  // 5. Filters: by status and by template, kept in the URL.
  await page.getByRole('combobox', { name: 'Template' }).click();
  await page.getByRole('option', { name: 'web-cluster', exact: true }).click();
  await page.waitForURL(/template=web-cluster/);
  await page.waitForFunction(() => {
    const cells = [...document.querySelectorAll('[data-testid="cluster-table"] tbody tr td:nth-child(3)')];
    return cells.length > 0 && cells.every((c) => c.textContent === 'web-cluster');
  });
  check((await rows.count()) === Math.floor(aliceClusters / 3), `template filter shows ${await rows.count()} rows`);
  await view(page, '06-clusters-filtered');
  await page.getByRole('button', { name: 'Clear filters' }).first().click();
  await page.waitForURL((u) => !u.search.includes('template'));
  await page.goto(`${base}/clusters?status=TERMINATED`);
  await page.getByText('No clusters match these filters').waitFor();
  await view(page, '07-clusters-empty-filter');
  await page.getByRole('button', { name: 'Clear filters' }).first().click();
  await rows.first().waitFor();

  // 6. The server restarts: the UI says so, reconnects, resubscribes.
  await live();
  await need('stop-server');
  await page.locator('[data-connection="reconnecting"]').waitFor();
  await view(page, '08-disconnected');
  await need('start-server');
  await page.locator('[data-connection="connected"]').waitFor({ timeout: 30_000 });
  // Resubscribed: a change made now still reaches the row.
  await need('delete-newest');
  await page
    .locator(`tr[data-cluster-id="${newestAliceCluster}"][data-status="TERMINATED"]`)
    .waitFor({ timeout: 60_000 });
  console.log('reconnected after a server restart; the deleted cluster turned TERMINATED live');
  // A deleted cluster's page says its machines and lease are gone: its
  // nodes once read OK, with services running and ssh commands.
  await page.locator(`tr[data-cluster-id="${newestAliceCluster}"] td:first-child a`).click();
  await page.getByTestId('lease-end').filter({ hasText: 'none: deleted' }).waitFor();
  await page.getByText('Machine deleted').first().waitFor();
  const sshCells = await page.getByTestId('node-ssh').allTextContents();
  check(
    sshCells.length > 0 && sshCells.every((c) => c.trim() === 'Machine deleted'),
    `a deleted cluster's nodes offer ssh: ${JSON.stringify(sshCells)}`,
  );
  await view(page, '08b-cluster-deleted');

  // 7. The gallery and a cluster's page.
  await page.getByRole('link', { name: 'Templates' }).click();
  await page.locator('[data-template="web-cluster"]').waitFor();
  const webCard = await page.locator('[data-template="web-cluster"]').textContent();
  for (const want of ['One haproxy load balancer', 'lb', 'web', 'base', '2 or more nodes', 'No lease']) {
    check(webCard.includes(want), `the web-cluster card lacks ${want}: ${webCard}`);
  }
  check(
    (await page.locator('[data-template="single"]').textContent()).includes('exactly 1 node'),
    'the single card lacks its size',
  );
  await view(page, '09-templates');
  await page.getByRole('link', { name: 'Clusters' }).click();
  await rows.first().waitFor();
  const second = rows.nth(1);
  const secondName = await second.locator('td:first-child a').textContent();
  await second.locator('td:first-child a').click();
  await page.getByRole('heading', { name: secondName }).waitFor();
  await page.getByText('ACTIVE').first().waitFor();
  await view(page, '10-cluster');
  await page.goto(`${base}/clusters/00000000-0000-0000-0000-000000000000`);
  await page.getByText('No such cluster').waitFor();

  // 8. Admin pages are not for her.
  await page.goto(`${base}/admin/catalog`);
  await page.getByText('For tenant admins').waitFor();
  check((await page.getByTestId('admin-nav').count()) === 0, 'admin navigation on the admin-only page');
  await view(page, '11-admin-refused');
  await cspViolations();

  // 9. Signing out ends the session on the server.
  await signOut();
  check(
    (await page.evaluate(() => fetch('/auth/session').then((r) => r.status))) === 401,
    'the session lives on after sign-out',
  );
  await page.goto(`${base}/clusters`);
  await page.waitForURL(/\/signin/);

  // 10. The tenant admin: admin navigation, every user's clusters with owners, the catalog.
  await signIn(tokens.admin);
  await page.waitForURL(/\/clusters$/);
  await rows.first().waitFor();
  await page.getByTestId('admin-nav').waitFor();
  await page.getByRole('columnheader', { name: 'Owner' }).waitFor();
  const owners = new Set(await rows.locator('td:nth-child(5)').allTextContents());
  check(owners.has('alice'), `the admin's list shows owners ${[...owners]}`);
  await view(page, '12-clusters-admin');
  await page.getByRole('link', { name: 'Catalog' }).click();
  await page.getByRole('tab', { name: 'Templates' }).waitFor();
  await page.getByRole('cell', { name: 'web-cluster', exact: true }).waitFor();
  await view(page, '13-admin-catalog');
  await page.getByRole('tab', { name: 'Services' }).click();
  await page
    .getByRole('cell', { name: 'haproxy' })
    .or(page.getByRole('cell', { name: 'lb', exact: true }))
    .first()
    .waitFor();
  await view(page, '14-admin-catalog-services');
  await page.getByTestId('user-menu').click();
  await page.getByRole('button', { name: 'Sign out' }).waitFor();
  check(
    (await page.getByRole('dialog').textContent()).includes('tenant admin'),
    'the account popover does not say the role',
  );
  await view(page, '15-user-menu');
  await page.getByRole('button', { name: 'Sign out' }).click();
  await page.waitForURL(/\/signin/);

  // 11. Dark theme, as a person who prefers it sees the list. Signing in
  // returns to the page the last session was on (the admin's catalog):
  // bob starts from the list.
  await page.emulateMedia({ colorScheme: 'dark' });
  await page.goto(`${base}/clusters`);
  await page.waitForURL(/\/signin/);
  await signIn(tokens.bob);
  await page.waitForURL(/\/clusters$/);
  await rows.first().waitFor();
  check((await rows.count()) === 1, 'bob sees clusters that are not his');
  await view(page, '16-clusters-dark');
  await cspViolations();
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
