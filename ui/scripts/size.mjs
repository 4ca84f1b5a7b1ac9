// Reports the JavaScript a first page load fetches (index.html's module
// script and the chunks it preloads), gzipped as the server sends it, and
// fails the build when it is over the budget of 250 KB. Lazy chunks (one
// per view) are listed too.
import { readdirSync, readFileSync } from 'node:fs';
import { gzipSync } from 'node:zlib';

const budget = 250 * 1024;
const dist = new URL('../dist/', import.meta.url);
const html = readFileSync(new URL('index.html', dist), 'utf8');
const initial = [
  ...html.matchAll(/<(?:script[^>]*\ssrc|link[^>]*rel="modulepreload"[^>]*\shref)="\/([^"]+\.js)"/g),
].map((m) => m[1]);

const gz = (name) => gzipSync(readFileSync(new URL(name, dist)), { level: 9 }).length;
const kb = (n) => `${(n / 1024).toFixed(1)} KB`;

let total = 0;
for (const f of initial) total += gz(f);
const lazy = readdirSync(new URL('assets/', dist))
  .filter((f) => f.endsWith('.js') && !initial.includes(`assets/${f}`))
  .map((f) => [f, gz(`assets/${f}`)])
  .sort((a, b) => b[1] - a[1]);

console.log(`initial JavaScript: ${kb(total)} gzipped in ${initial.length} files (budget ${kb(budget)})`);
for (const f of initial) console.log(`  ${f}  ${kb(gz(f))}`);
console.log(
  `lazy chunks: ${lazy.length}, largest ${lazy
    .slice(0, 5)
    .map(([f, n]) => `${f} ${kb(n)}`)
    .join(', ')}`,
);
if (total > budget) {
  console.error(`initial JavaScript is over the budget by ${kb(total - budget)}`);
  process.exit(1);
}
