// The admin views in a real browser, as tests/browser.mjs drives the
// user's: run it through `go test -run TestBrowserAdmin ./ui/uitest`,
// which starts the server with tenant acme (the example catalog, an
// admin, users alice and bob) and passes the tokens. Every view is checked
// with axe-core (no serious or critical violation) and saved as a
// screenshot (a-NN-name.png) in $COOPR_SCREENSHOTS; a CSP violation or an
// uncaught page error fails the run.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { chromium } from 'playwright-core';

const env = (name) => {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set: run this through go test -run TestBrowserAdmin ./ui/uitest`);
  return v;
};
const base = env('COOPR_URL');
const shots = env('COOPR_SCREENSHOTS');
const tokens = { admin: env('COOPR_ADMIN_TOKEN'), alice: env('COOPR_ALICE_TOKEN'), super: env('COOPR_SUPER_TOKEN') };
const exampleCatalog = env('COOPR_EXAMPLE_CATALOG');
const axeSource = readFileSync(new URL('../node_modules/axe-core/axe.min.js', import.meta.url), 'utf8');

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
const readmeShots = { '08d-catalog': 'admin-catalog.png', '04-builder-solved': 'template-builder.png' };

async function view(page, name) {
  await page.waitForTimeout(300);
  await page.screenshot({ path: join(shots, `a-${name}.png`), fullPage: true });
  if (process.env.COOPR_README_SHOTS && readmeShots[name])
    await page.screenshot({ path: join(process.env.COOPR_README_SHOTS, readmeShots[name]) });
  await page.evaluate(axeSource);
  // eslint-disable-next-line no-undef
  const result = await page.evaluate(() => axe.run(document, { resultTypes: ['violations'] }));
  for (const v of result.violations) {
    const where = v.nodes
      .slice(0, 3)
      .map((n) => n.target.join(' '))
      .join(' | ');
    const line = `${name}: ${v.impact} ${v.id}: ${v.help} (${v.nodes.length} nodes: ${where})`;
    a11yReport.push(line);
    if (v.impact === 'serious' || v.impact === 'critical') problems.push(`accessibility: ${line}`);
  }
  console.log(
    `${((Date.now() - started) / 1000).toFixed(1)} s: view a-${name}: screenshot, axe ${result.violations.length} violations`,
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
    '--no-first-run',
    '--disable-background-networking',
    '--disable-sync',
  ],
  viewport: { width: 1400, height: 900 },
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
    for (const x of await page.evaluate(() => window.__csp ?? [])) problems.push(`CSP violation: ${x}`);
    await page.evaluate(() => (window.__csp = []));
  };
  const signIn = async (token) => {
    await page.goto(`${base}/signin`);
    await page.getByLabel('API token').fill(token);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL(/\/clusters$/);
  };
  const signOut = async () => {
    await page.getByTestId('user-menu').click();
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.waitForURL(/\/signin/);
  };
  const dialog = () => page.getByRole('dialog');
  const confirm = async (name) => {
    await dialog().getByRole('button', { name }).click();
    await dialog().waitFor({ state: 'detached' });
  };
  // pick chooses an option of a Select or MultiSelect by its label.
  const pick = async (label, ...options) => {
    for (const o of options) {
      await page.getByRole('combobox', { name: label, exact: true }).click();
      await page.getByRole('option', { name: o, exact: true }).click();
    }
    await page.keyboard.press('Escape');
  };
  // layout waits for the live solve to show exactly these rows ("count services+...").
  const layout = async (...rows) => {
    await page
      .waitForFunction(
        (want) => {
          const got = [...document.querySelectorAll('[data-testid="solve-layout"] tr[data-layout]')].map((r) =>
            r.getAttribute('data-layout'),
          );
          return (
            document.querySelector('[data-testid="solve-panel"]')?.getAttribute('aria-busy') === 'false' &&
            got.join(' | ') === want.join(' | ')
          );
        },
        rows,
        { timeout: 15_000 },
      )
      .catch(async (e) => {
        const got = await page.locator('[data-testid="solve-panel"]').textContent();
        throw new Error(`the live solve does not show ${rows.join(' | ')}: ${got} (${e.message})`);
      });
  };

  // The tenant's clusters come up.
  await need('activate');
  await signIn(tokens.admin);
  // 0. Sync a cluster to its template's newest version: the preview shows
  // the versions and the services added; a version the layout breaks is
  // refused with the solver's reasons in the dialog.
  await need('template-version-adds-metrics');
  // alice-30, a web-cluster, is the world's newest cluster.
  await page.goto(`${base}/clusters/00000032`);
  await page.getByRole('heading', { name: 'alice-30' }).waitFor();
  await page.getByTestId('node-table').waitFor();
  await page.getByText('ACTIVE').first().waitFor({ timeout: 60_000 });
  await page.getByRole('button', { name: 'Operations' }).click();
  await page.getByRole('menuitem', { name: 'Sync template' }).click();
  await page.getByRole('button', { name: 'Preview' }).click();
  await page.getByTestId('sync-preview').waitFor();
  const syncText = await page.getByTestId('sync-preview').textContent();
  check(/From version 1 to [2-9]/.test(syncText), `the sync preview's versions: ${syncText}`);
  check(syncText.includes('Services added: metrics'), `the sync preview adds no metrics: ${syncText}`);
  check(
    (await page.getByTestId('constraint-changes').textContent()).includes('constraints.size'),
    'no constraint change listed',
  );
  await view(page, '00a-sync-preview');
  await page.keyboard.press('Escape');
  await dialog().waitFor({ state: 'detached' });
  await need('template-version-breaks-layout');
  await page.getByRole('button', { name: 'Operations' }).click();
  await page.getByRole('menuitem', { name: 'Sync template' }).click();
  await page.getByRole('button', { name: 'Preview' }).click();
  const reasons = dialog().getByTestId('error-reasons');
  await reasons.waitFor();
  check(
    (await reasons.textContent()).includes('lb is on 1 nodes, outside 2..'),
    `the refusal's reasons: ${await reasons.textContent()}`,
  );
  check((await page.getByTestId('operation-preview').count()) === 0, 'a refused sync shows a plan');
  await view(page, '00b-sync-refused');
  await page.keyboard.press('Escape');
  await dialog().waitFor({ state: 'detached' });
  await need('template-versions-undone');
  await signOut();

  // 0b. The superadmin: tenants, agents, and a shared automator type given
  // a resource type (which the tenant's resources use below).
  await signIn(tokens.super);
  await page.getByRole('link', { name: 'Tenants' }).click();
  await page.locator('tr[data-tenant="acme"]').waitFor();
  await page.getByRole('button', { name: 'Edit acme' }).click();
  await dialog().getByLabel('Max clusters').fill('100');
  await dialog().getByRole('button', { name: 'Save' }).click();
  await dialog().waitFor({ state: 'detached' });
  await page.locator('tr[data-tenant="acme"] td:nth-child(3)', { hasText: '100' }).waitFor();
  await page.getByLabel('Tenant name').fill('globex');
  await page.getByLabel('Description').fill('A second tenant, made in the browser test');
  await page.getByLabel('Workers').fill('2');
  await page.getByLabel('Max nodes').fill('20');
  await page.getByRole('button', { name: 'Create tenant' }).click();
  await page.locator('tr[data-tenant="globex"]').waitFor();
  check(
    (await page.locator('tr[data-tenant="globex"]').textContent()).includes('20'),
    'globex does not show its node quota',
  );
  await view(page, '00-tenants');
  await page.getByRole('link', { name: 'Agents' }).click();
  await page.locator('tr[data-agent="ui-agent"][data-state="live"]').waitFor();
  await view(page, '00-agents');
  await page.goto(`${base}/admin/catalog/automatortypes/shell`);
  await page.getByRole('heading', { name: /shell\s*v1/ }).waitFor();
  const shell = JSON.parse(await page.getByLabel('Document (JSON)').inputValue());
  shell.resourceTypes = { scripts: { format: 'file', permissions: '0755' } };
  await page.getByLabel('Document (JSON)').fill(JSON.stringify(shell, null, 2));
  await page.getByRole('button', { name: 'Save new version' }).click();
  await page.getByRole('heading', { name: /shell\s*v2/ }).waitFor();
  await cspViolations();
  await signOut();

  // 1. The admin deletes a service in the catalog; the import brings it back.
  await signIn(tokens.admin);
  check((await page.getByRole('link', { name: 'Tenants' }).count()) === 0, 'a tenant admin sees the tenants view');
  await page.getByRole('link', { name: 'Catalog' }).click();
  await page.getByRole('tab', { name: 'Services' }).click();
  await page.getByRole('link', { name: 'metrics' }).click();
  await page.getByRole('heading', { name: /metrics/ }).waitFor();
  await page.getByRole('button', { name: 'Delete', exact: true }).click();
  await view(page, '01-delete-confirm');
  await confirm('Delete metrics');
  await page.waitForURL(/\/admin\/catalog\?kind=services/);
  await page.getByRole('link', { name: 'web', exact: true }).waitFor();
  await page.getByRole('link', { name: 'metrics' }).waitFor({ state: 'detached' });

  // 2. Import examples/catalog through the import view.
  await page.getByRole('link', { name: 'Import' }).click();
  await page.getByRole('heading', { name: 'Import a catalog' }).waitFor();
  await page.getByTestId('catalog-directory').setInputFiles(exampleCatalog);
  await page.getByTestId('import-summary').waitFor();
  const summary = await page.getByTestId('import-summary').textContent();
  for (const want of ['metrics', 'web-cluster', 'pool', 'Provider types and Automator types are shared']) {
    check(summary.includes(want), `the import summary lacks ${want}: ${summary}`);
  }
  await view(page, '02-import-chosen');
  await page.getByRole('button', { name: /^Import \d+ entities$/ }).click();
  await confirm('Import');
  await page.getByTestId('import-result').waitFor();
  const imported = await page.getByTestId('import-result').textContent();
  check(/1 created/.test(imported) && /0 deleted/.test(imported), `import result: ${imported}`);
  await view(page, '03-import-done');
  await page.goto(`${base}/admin/catalog?kind=services`);
  await page.getByRole('link', { name: 'metrics' }).waitFor();
  console.log(`imported the example catalog through the UI: ${imported}`);

  // 3. The template builder: a new template, solved live as it is built.
  await page.goto(`${base}/admin/catalog?kind=clustertemplates`);
  await page.getByRole('link', { name: 'New cluster template' }).click();
  await page.getByRole('heading', { name: 'New cluster template' }).waitFor();
  await page.getByLabel('Name', { exact: true }).fill('lb-pair');
  await page.getByLabel('Description').fill('A load balancer and web servers, built in the browser test');
  await pick('Compatible services', 'base', 'lb', 'web');
  await pick('Compatible hardware types', 'small');
  await pick('Compatible image types', 'debian12');
  await pick('Default services', 'base', 'lb', 'web');
  await pick('Default provider', 'local');
  await pick('Default hardware type', 'small');
  await pick('Default image type', 'debian12');
  await layout('3 base+lb+web');
  await view(page, '04-builder-solved');
  // lb and web apart: the layout splits as the admin adds the group.
  await pick("New can't coexist group", 'lb', 'web');
  await page.getByRole('button', { name: 'Add group' }).nth(1).click();
  await page.waitForFunction(
    () => document.querySelector('[data-testid="solve-panel"]')?.getAttribute('aria-busy') === 'false',
  );
  console.log(`lb and web apart, no quantities: ${await page.getByTestId('solve-panel').textContent()}`);
  // Exactly one lb: one lb node, the rest web.
  await pick('Constrain a service', 'lb');
  await page.getByRole('button', { name: 'Add', exact: true }).click();
  await page.getByLabel('Minimum nodes with lb').fill('1');
  await page.getByLabel('Maximum nodes with lb').fill('1');
  await layout('1 base+lb', '2 base+web');
  await page.getByLabel('Nodes', { exact: true }).fill('5');
  await layout('1 base+lb', '4 base+web');
  await view(page, '05-builder-constraints');
  // Too small for the template: the solver says why.
  await page.getByLabel('Minimum nodes', { exact: true }).fill('6');
  await page.getByTestId('solve-failure').waitFor();
  const why = await page.getByTestId('solve-failure').textContent();
  check(/6/.test(why), `the failure does not name the minimum: ${why}`);
  await view(page, '06-builder-failure');
  // A draft the catalog refuses: the error is on the field it names, as the admin types.
  await page.getByLabel('Maximum nodes', { exact: true }).fill('2');
  await page.waitForFunction(() =>
    [...document.querySelectorAll('.mantine-InputWrapper-error')].some((e) => /max|min/i.test(e.textContent ?? '')),
  );
  await view(page, '07-builder-field-error');
  await page.getByLabel('Maximum nodes', { exact: true }).fill('');
  await page.getByLabel('Minimum nodes', { exact: true }).fill('2');
  await layout('1 base+lb', '4 base+web');
  await page.getByRole('button', { name: 'Create cluster template' }).click();
  await page.waitForURL(/\/admin\/catalog\/clustertemplates\/lb-pair$/);
  await page.getByRole('heading', { name: /lb-pair\s*v1/ }).waitFor();

  // 4. A new version and the difference between the two.
  await page.getByLabel('Description').fill('One load balancer in front of web servers');
  await page.getByRole('button', { name: 'Save new version' }).click();
  await page.getByRole('heading', { name: /lb-pair\s*v2/ }).waitFor();
  await page.getByRole('tab', { name: /Versions/ }).click();
  await page.getByTestId('version-diff').waitFor();
  const changes = await page
    .getByTestId('version-diff')
    .locator('tbody tr')
    .evaluateAll((rows) => rows.map((r) => r.getAttribute('data-path')));
  check(changes.join() === 'description,version', `v1 → v2 changes ${changes}, want description and version`);
  await view(page, '08-versions-diff');

  // The stored templates open in the builder, solved at their minimum size.
  await page.goto(`${base}/admin/catalog/clustertemplates/web-cluster`);
  await page.getByRole('heading', { name: /web-cluster\s*v1/ }).waitFor();
  await layout('1 base+lb', '1 base+web');
  check(
    (await page.getByLabel('Config', { exact: true }).inputValue()).includes('hello from coopr'),
    "web-cluster's config is not in the builder",
  );
  await page.emulateMedia({ colorScheme: 'dark' });
  await view(page, '08b-builder-web-cluster-dark');
  await page.emulateMedia({ colorScheme: 'light' });
  await page.goto(`${base}/admin/catalog/hardwaretypes/small`);
  await page.getByLabel('flavor for local').waitFor();
  check((await page.getByLabel('flavor for local').inputValue()) === 'small', 'small has no flavor for local');
  await view(page, '08c-hardware-type');
  await page.goto(`${base}/admin/catalog?kind=clustertemplates`);
  await page.locator('tr[data-entity="lb-pair"]').waitFor();
  await view(page, '08d-catalog');

  // 5. A sensitive provider field: set or unset, never its value.
  const key = '-----BEGIN OPENSSH PRIVATE KEY-----\nMarkerNeverShownInTheBrowser42\n-----END OPENSSH PRIVATE KEY-----';
  await page.goto(`${base}/admin/catalog/providers/pool`);
  await page.getByRole('heading', { name: /pool\s*v1/ }).waitFor();
  check((await page.getByTestId('sensitive-ssh_key').textContent()) === 'unset', 'ssh_key is not shown unset');
  await page.getByLabel(/SSH private key/).fill(key);
  await page.getByRole('button', { name: 'Save new version' }).click();
  await page.getByRole('heading', { name: /pool\s*v2/ }).waitFor();
  await page.locator('[data-testid="sensitive-ssh_key"]', { hasText: /^set$/ }).waitFor();
  check(!(await page.content()).includes('MarkerNeverShown'), 'the page shows the sensitive value after saving');
  await view(page, '09-provider-sensitive');
  await page.reload();
  await page.locator('[data-testid="sensitive-ssh_key"]', { hasText: /^set$/ }).waitFor();
  await page.getByRole('tab', { name: /Versions/ }).click();
  await page.locator('[data-testid="version-diff"] tr[data-path="provisioner.ssh_key"]').waitFor();
  const keyRow = await page.locator('tr[data-path="provisioner.ssh_key"]').textContent();
  check(keyRow.includes('never shows it') && !keyRow.includes('Marker'), `the diff shows ssh_key as ${keyRow}`);
  check(!(await page.content()).includes('MarkerNeverShown'), 'the versions tab shows the sensitive value');
  await view(page, '10-provider-versions');

  // 6. A field the catalog refuses: the error is on that field.
  await page.goto(`${base}/admin/catalog/services/new`);
  await page.getByLabel('Name', { exact: true }).fill('web');
  await page.getByRole('button', { name: 'Create service' }).click();
  await page.getByText('web exists already').waitFor();
  await page.getByLabel('Name', { exact: true }).fill('Bad Name!');
  await page.getByRole('button', { name: 'Create service' }).click();
  await page.waitForFunction(() => {
    const input = [...document.querySelectorAll('input')].find((i) => i.value === 'Bad Name!');
    return input?.getAttribute('aria-invalid') === 'true';
  });
  await view(page, '11-entity-field-error');

  // 7. Plugin resources: upload, stage, sync (the generation moves), a second version deleted, recall.
  const script = join(userDataDir, 'hello.sh');
  writeFileSync(script, '#!/bin/sh\necho hello\n');
  await page.getByRole('link', { name: 'Resources' }).click();
  await page.getByTestId('resource-generation').filter({ hasText: 'Live generation 0' }).waitFor();
  await pick('Plugin', 'shell');
  await pick('Resource type', 'scripts (file)');
  await page.getByTestId('resource-file').setInputFiles(script);
  await page.getByRole('button', { name: 'Upload' }).click();
  const row = (v, state) => page.locator(`tr[data-resource="hello v${v}"][data-state="${state}"]`);
  await row(1, 'INACTIVE').waitFor();
  await page.getByRole('button', { name: 'Stage hello v1' }).click();
  await row(1, 'STAGED').waitFor();
  await page.getByRole('button', { name: 'Sync', exact: true }).click();
  await confirm('Sync');
  await row(1, 'ACTIVE').waitFor();
  await page.getByTestId('resource-generation').filter({ hasText: 'Live generation 1' }).waitFor();
  await page.getByTestId('resource-file').setInputFiles(script);
  await page.getByRole('button', { name: 'Upload' }).click();
  await row(2, 'INACTIVE').waitFor();
  await view(page, '12-resources');
  await page.getByRole('button', { name: 'Delete hello v2' }).click();
  await confirm('Delete');
  await page.locator('tr[data-resource="hello v2"]').waitFor({ state: 'detached' });
  await page.getByRole('button', { name: 'Recall hello v1' }).click();
  await row(1, 'RECALLED').waitFor();

  // 8. Users and tokens: a new user, a token shown once, revoked.
  await page.getByRole('link', { name: 'Users and tokens' }).click();
  await page.locator('tr[data-user="alice"]').waitFor();
  await page.getByLabel('New user').fill('carol');
  await page.getByRole('button', { name: 'Add user' }).click();
  await page.locator('tr[data-user="carol"]').waitFor();
  await page.getByLabel('New token').fill('laptop');
  await pick('For user', 'carol');
  await page.getByRole('button', { name: 'Create token' }).click();
  const secret = (await page.getByTestId('new-token-secret').textContent()).trim();
  check(secret.startsWith('coopr_'), `the new token's secret is ${secret}`);
  await view(page, '13-token-shown-once');
  await dialog().getByRole('button', { name: 'Done' }).click();
  await dialog().waitFor({ state: 'detached' });
  check(!(await page.content()).includes(secret), 'the secret is still on the page after Done');
  await page.locator('tr[data-token="carol/laptop"][data-revoked="false"]').waitFor();
  await page.getByRole('button', { name: 'Revoke laptop of carol' }).click();
  await confirm('Revoke');
  await page.locator('tr[data-token="carol/laptop"][data-revoked="true"]').waitFor();
  await view(page, '14-users-tokens');

  // 8b. The tenant's adminSSHKeys switch: off, turned on, on after a reload.
  const sshSwitch = page.getByRole('switch', { name: /tenant admins' SSH keys/ });
  check(!(await sshSwitch.isChecked()), 'adminSSHKeys is on before anyone turned it on');
  await sshSwitch.click();
  await page.waitForFunction(
    () => document.querySelector('[data-testid="admin-ssh-keys"]')?.checked === true,
    undefined,
    {
      timeout: 10_000,
    },
  );
  await page.reload();
  await page.locator('tr[data-user="alice"]').waitFor();
  check(await sshSwitch.isChecked(), 'adminSSHKeys is off again after a reload');
  await view(page, '14b-admin-ssh-keys');

  // 8c. The admin's own SSH keys: added (the page says which clusters get
  // it), listed, removed.
  await page.getByTestId('user-menu').click();
  await page.getByRole('link', { name: 'SSH keys' }).click();
  await page.getByRole('heading', { name: 'SSH keys' }).waitFor();
  await page.getByLabel('Public key').fill(env('COOPR_TEST_SSH_KEY'));
  await page.getByLabel('Name').fill('laptop');
  await page.getByRole('button', { name: 'Add key' }).click();
  await page.locator('tr[data-ssh-key="laptop"]').waitFor();
  const updates = await page.getByTestId('ssh-key-updates').textContent();
  check(/updating the keys on \d+ clusters?/.test(updates), `no word of the key updates: ${updates}`);
  check((await page.locator('tr[data-ssh-key="laptop"]').textContent()).includes('SHA256:'), 'no fingerprint');
  await view(page, '14c-ssh-keys');
  await page.getByRole('button', { name: 'Remove laptop' }).click();
  await confirm('Remove');
  await page.locator('tr[data-ssh-key="laptop"]').waitFor({ state: 'detached' });

  await page.goto(`${base}/admin/tenants`);
  await page.getByText('For the superadmin').waitFor();
  await cspViolations();
  await signOut();

  // 9. A plain user sees no admin view.
  await signIn(tokens.alice);
  check((await page.getByTestId('admin-nav').count()) === 0, 'alice sees the admin navigation');
  for (const path of [
    '/admin/catalog',
    '/admin/catalog/import',
    '/admin/catalog/clustertemplates/web-cluster',
    '/admin/resources',
    '/admin/users',
    '/admin/agents',
    '/admin/tenants',
  ]) {
    await page.goto(`${base}${path}`);
    await page.getByText('For tenant admins').waitFor();
    check(
      (await page.getByRole('button', { name: /Save|Import|Upload|Create/ }).count()) === 0,
      `alice sees controls on ${path}`,
    );
  }
  await view(page, '15-user-refused');
  await cspViolations();
} catch (e) {
  failed = true;
  console.error(`FAIL: ${e.stack ?? e}`);
  const page = context.pages()[0];
  if (page) await page.screenshot({ path: join(shots, 'a-failure.png'), fullPage: true }).catch(() => {});
} finally {
  await context.close();
  rmSync(userDataDir, { recursive: true, force: true });
}
if (a11yReport.length > 0) console.log(`axe findings:\n  ${a11yReport.join('\n  ')}`);
if (problems.length > 0) {
  console.error(`problems:\n  ${problems.join('\n  ')}`);
  failed = true;
}
console.log(failed ? 'admin browser tests failed' : 'admin browser tests passed');
process.exit(failed ? 1 : 0);
