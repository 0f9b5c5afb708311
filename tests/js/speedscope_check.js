// Loads a speedscope file into speedscope's own app (the npm package ships the built app) in
// headless Chromium and prints what the app shows, for the tests to compare with perf:
//   title TEXT            the profile selector ("comm (pid/tid) (1/N)")
//   row SELF_NS NAME      each row of the Sandwich view's table: the self time per function,
//                         read back from its text ("95.75ms") in nanoseconds
//   precision NS          half a unit of the last digit shown, for the largest unit used
// Usage: node speedscope_check.js FILE.json
'use strict';
const fs = require('fs');
const http = require('http');
const os = require('os');
const path = require('path');
const puppeteer = require('puppeteer-core');

const appDir = path.join(__dirname, 'node_modules', 'speedscope', 'dist', 'release');
const profilePath = process.argv[2];
const types = { '.html': 'text/html', '.js': 'application/javascript', '.css': 'text/css',
                '.json': 'application/json', '.wasm': 'application/wasm', '.png': 'image/png' };

// The app and the profile from one local server: the app fetches #profileURL= like any URL.
const server = http.createServer((req, res) => {
  const url = decodeURIComponent(req.url.split('?')[0]);
  const file = url === '/profile.json' ? profilePath : path.join(appDir, url === '/' ? 'index.html' : url);
  fs.readFile(file, (err, data) => {
    if (err) {
      res.writeHead(404);
      res.end();
      return;
    }
    res.writeHead(200, { 'Content-Type': types[path.extname(file)] || 'application/octet-stream' });
    res.end(data);
  });
});

const units = { 'ns': 1, 'µs': 1e3, 'ms': 1e6, 's': 1e9, 'min': 60e9 };

async function main() {
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const base = `http://127.0.0.1:${server.address().port}`;
  const userDataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tperf-chromium-'));
  const browser = await puppeteer.launch({
    executablePath: '/usr/bin/chromium',
    headless: true,
    userDataDir,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking',
           '--disable-component-update', '--disable-sync', '--no-first-run'],
  });
  try {
    const page = await browser.newPage();
    const errors = [];
    page.on('pageerror', (e) => errors.push(String(e)));
    await page.goto(`${base}/index.html#profileURL=${encodeURIComponent(base + '/profile.json')}`);
    // Loaded when the toolbar names the profile "(1/N)".
    await page.waitForFunction(() => /\(\d+\/\d+\)/.test(document.body.innerText), { timeout: 30000 });
    await page.keyboard.press('3');  // the Sandwich view
    await page.waitForFunction(() => /Symbol Name\s+[\d.]+(ns|µs|ms|s|min) /.test(document.body.innerText),
                               { timeout: 30000 });
    // The table fills in over a few frames: read it once it stops changing.
    let text = '';
    for (let same = 0; same < 2;) {
      await new Promise((r) => setTimeout(r, 300));
      const now = await page.evaluate(() => document.body.innerText);
      same = now === text ? same + 1 : 0;
      text = now;
    }
    if (errors.length) throw new Error('page errors: ' + errors.join('; '));
    const lines = text.split('\n').map((l) => l.replace(/\t/g, '').trim()).filter((l) => l.length);
    const out = [];
    const title = lines.find((l) => /\(\d+\/\d+\)$/.test(l));
    out.push(`title ${title}`);
    const start = lines.findIndex((l) => l === 'TotalSelfSymbol Name');
    if (start < 0) throw new Error('no Sandwich table in:\n' + text);
    let precision = 0;
    for (let i = start + 1; i + 2 < lines.length + 1; i += 3) {
      const m = /^([\d.]+)(ns|µs|ms|s|min) /.exec(lines[i + 1] || '');
      if (!m) break;
      precision = Math.max(precision, units[m[2]] * 0.005);
      out.push(`row ${Math.round(parseFloat(m[1]) * units[m[2]])} ${lines[i + 2]}`);
    }
    out.push(`precision ${precision}`);
    process.stdout.write(out.join('\n') + '\n');
  } finally {
    await browser.close();
    server.close();
    fs.rmSync(userDataDir, { recursive: true, force: true });
  }
}

main().catch((e) => {
  console.error(String(e && e.stack || e));
  process.exit(1);
});
