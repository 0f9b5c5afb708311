// Opens a tperf flame page in headless Chromium (Debian's /usr/bin/chromium, through
// puppeteer-core), uses it as a person would (mouse click on a frame, typing a search, clicking
// table headers) and prints what it saw as "key=value" lines for the GoogleTest that runs it
// (tests/e2e/flame_browser_test.cc), which holds them against perf/tperf report.
//
//   node flame_check.js PAGE [--zoom NAME] [--search REGEX] [--sort] [--thread TID] [--event NAME] [--screenshot PNG]
//                            [--timeline] [--range B0,B1 [--range-thread TID]]
//
// --timeline prints the timeline's buckets and, per lane, its thread, off-CPU ns and the pixel
// columns drawn in the sleeping colour; --range drags the mouse across the timeline from the
// middle of bucket B0 to the middle of bucket B1 and prints the range the page took and the
// totals in it (the range stays selected for the later checks; reset at the end).
//
// Exit status 0 when the page could be driven (the checks are the caller's), 1 otherwise, with
// "error=..." and any page errors printed.
'use strict';
const fs = require('fs');
const os = require('os');
const path = require('path');
const puppeteer = require('puppeteer-core');

function parseArgs(argv) {
  const out = { page: null, zoom: null, search: null, sort: false, thread: null, event: null, screenshot: null,
    timeline: false, range: null, rangeThread: null };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--zoom') out.zoom = argv[++i];
    else if (a === '--search') out.search = argv[++i];
    else if (a === '--sort') out.sort = true;
    else if (a === '--thread') out.thread = argv[++i];
    else if (a === '--event') out.event = argv[++i];
    else if (a === '--screenshot') out.screenshot = argv[++i];
    else if (a === '--timeline') out.timeline = true;
    else if (a === '--range') out.range = argv[++i].split(',').map(Number);
    else if (a === '--range-thread') out.rangeThread = argv[++i];
    else if (!out.page) out.page = a;
    else throw new Error(`unexpected argument ${a}`);
  }
  if (!out.page) throw new Error('usage: flame_check.js PAGE [--zoom NAME] [--search REGEX] [--sort] [--screenshot PNG]');
  return out;
}

function say(key, value) {
  // One line per fact; newlines in values would split them.
  process.stdout.write(`${key}=${String(value).replace(/\n/g, '\\n')}\n`);
}

// Pixels of the canvas that are not the blank background, and those in the search colour.
async function canvasPixels(page) {
  return page.evaluate(() => {
    const c = document.getElementById('graph');
    const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
    let painted = 0, highlighted = 0;
    for (let i = 0; i < d.length; i += 4) {
      if (d[i + 3] === 0) continue;
      if (!(d[i] > 250 && d[i + 1] > 250 && d[i + 2] > 250)) painted++;
      // #d62fd0, the search highlight
      if (Math.abs(d[i] - 0xd6) < 3 && Math.abs(d[i + 1] - 0x2f) < 3 && Math.abs(d[i + 2] - 0xd0) < 3) highlighted++;
    }
    return { painted, highlighted, width: c.width, height: c.height };
  });
}

async function tableColumn(page, col) {
  return page.evaluate((col) => [...document.querySelectorAll('#functions tbody tr')].map((tr) => {
    const td = tr.children[col];
    return td.dataset.value !== undefined ? td.dataset.value : td.textContent;
  }), col);
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  const userDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tperf-chromium-'));
  const errors = [];
  // Without the networking switches Chromium's own background connections fail slowly on a
  // closed network; a fresh profile keeps runs independent.
  const browser = await puppeteer.launch({
    executablePath: process.env.TPERF_CHROMIUM || '/usr/bin/chromium',
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
      '--disable-component-update', '--disable-sync', `--user-data-dir=${userDir}`],
  });
  try {
    const page = await browser.newPage();
    page.on('pageerror', (e) => errors.push(String(e)));
    page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
    // The page must not reach for the network: any request other than the file itself fails.
    await page.setRequestInterception(true);
    page.on('request', (r) => {
      if (r.url().startsWith('file:')) r.continue();
      else { errors.push(`network request: ${r.url()}`); r.abort(); }
    });
    await page.setViewport({ width: 1400, height: 1000 });
    const t0 = Date.now();
    await page.goto('file://' + path.resolve(args.page), { waitUntil: 'load', timeout: 120000 });
    await page.waitForFunction(() => document.body.dataset.ready === '1', { timeout: 120000 });
    say('load_ms', Date.now() - t0);
    say('nodes', await page.evaluate(() => window.tperfFlame.nodes));
    say('drawn', await page.evaluate(() => window.tperfFlame.drawn()));
    const px = await canvasPixels(page);
    say('painted', px.painted);
    say('canvas', `${px.width}x${px.height}`);
    say('canvas_css_width', await page.evaluate(() => window.tperfFlame.canvasWidth()));

    say('total', await page.evaluate(() => window.tperfFlame.total()));
    if (args.timeline) {
      const tl = await page.evaluate(() => window.tperfFlame.timeline());
      say('tl_present', tl ? 1 : 0);
      if (tl) {
        say('tl_start', tl.start);
        say('tl_width', tl.width);
        say('tl_buckets', tl.buckets);
        say('tl_states', tl.hasStates ? 1 : 0);
        say('tl_candidates', tl.candidates);
        say('tl_ns_per_px', (tl.width * tl.buckets) / (tl.right - tl.left));
        // Per lane, the pixel columns with the sleeping colour (#8fb0d8) in its band.
        const cols = await page.evaluate((lanes, h) => {
          const c = document.getElementById('timeline');
          const dpr = c.width / c.getBoundingClientRect().width;
          const ctx = c.getContext('2d');
          return lanes.map((l) => {
            const y0 = Math.round(l.y * dpr), y1 = Math.round((l.y + h) * dpr);
            const d = ctx.getImageData(0, y0, c.width, y1 - y0).data;
            let n = 0;
            for (let x = 0; x < c.width; x++) {
              for (let y = 0; y < y1 - y0; y++) {
                const i = (y * c.width + x) * 4;
                if (Math.abs(d[i] - 0x8f) < 3 && Math.abs(d[i + 1] - 0xb0) < 3 && Math.abs(d[i + 2] - 0xd8) < 3) { n++; break; }
              }
            }
            return n / dpr;
          });
        }, tl.lanes, tl.laneHeight);
        tl.lanes.forEach((l, i) => say('tl_lane', `${l.tid}|${l.label}|${l.sleepingNs}|${l.runnableNs}|${cols[i]}`));
      }
    }
    if (args.range) {
      const box = await (await page.$('#timeline')).boundingBox();
      const mid = async (b) => page.evaluate((b) => (window.tperfFlame.bucketX(b) + window.tperfFlame.bucketX(b + 1)) / 2, b);
      const y = box.y + 10;  // the density track
      await page.mouse.move(box.x + (await mid(args.range[0])), y);
      await page.mouse.down();
      await page.mouse.move(box.x + (await mid(args.range[1])), y, { steps: 8 });
      await page.mouse.up();
      const r = await page.evaluate(() => window.tperfFlame.range());
      say('range', r ? r.join(',') : '');
      say('range_info', await page.$eval('#range-info', (e) => e.textContent));
      say('range_total', await page.evaluate(() => window.tperfFlame.total()));
      await page.select('#metric', 'samples');
      say('range_samples', await page.evaluate(() => window.tperfFlame.total()));
      await page.select('#metric', 'weight');
      say('range_painted', (await canvasPixels(page)).painted);
      if (args.rangeThread) {
        await page.select('#thread', args.rangeThread);
        say('range_thread_total', await page.evaluate(() => window.tperfFlame.total()));
        await page.select('#metric', 'samples');
        say('range_thread_samples', await page.evaluate(() => window.tperfFlame.total()));
        await page.select('#metric', 'weight');
        await page.select('#thread', 'all');
      }
    }
    if (args.thread) {
      // The thread filter, picked from its list as a person would, then back to all threads.
      const offered = await page.$$eval('#thread option', (os) => os.map((o) => o.value));
      say('thread_offered', offered.includes(args.thread) ? 1 : 0);
      await page.select('#thread', args.thread);
      say('thread_total', await page.evaluate(() => window.tperfFlame.total()));
      say('thread_painted', (await canvasPixels(page)).painted);
      await page.select('#thread', 'all');
      say('thread_back_total', await page.evaluate(() => window.tperfFlame.total()));
    }

    if (args.event) {
      // The event whose list entry starts with NAME (they read "NAME (N samples)").
      const value = await page.$$eval('#event option', (os, name) => {
        const o = os.find((x) => x.textContent.startsWith(name + ' ('));
        return o ? o.value : null;
      }, args.event);
      say('event_offered', value === null ? 0 : 1);
      if (value !== null) {
        await page.select('#event', value);
        say('event_total', await page.evaluate(() => window.tperfFlame.total()));
        say('event_painted', (await canvasPixels(page)).painted);
        await page.select('#metric', 'samples');
        say('event_samples', await page.evaluate(() => window.tperfFlame.total()));
        await page.select('#metric', 'weight');
      }
    }

    if (args.zoom) {
      const r = await page.evaluate((n) => window.tperfFlame.frameRect(n), args.zoom);
      if (!r) {
        say('zoom_found', 0);
      } else {
        say('zoom_found', 1);
        say('zoom_before_w', r.w.toFixed(2));
        const box = await (await page.$('#graph')).boundingBox();
        // Hovering shows the tooltip.
        await page.mouse.move(box.x + r.x + Math.min(r.w / 2, 20), box.y + r.y + r.h / 2);
        say('tooltip', await page.$eval('#tooltip', (t) => (t.hidden ? '' : t.textContent)));
        // A real mouse click in the middle of the frame.
        await page.mouse.click(box.x + r.x + Math.min(r.w / 2, 20), box.y + r.y + r.h / 2);
        const after = await page.evaluate((n) => window.tperfFlame.frameRect(n), args.zoom);
        say('zoom_after_w', after ? after.w.toFixed(2) : -1);
        say('zoom_name', await page.evaluate(() => window.tperfFlame.zoomName()));
        const crumbs = await page.$$eval('#breadcrumb button', (bs) => bs.map((b) => b.textContent));
        say('breadcrumb', crumbs.join(' > '));
        // Back to the whole graph through the breadcrumb's first button.
        await page.click('#breadcrumb button');
        say('zoom_back', await page.evaluate(() => window.tperfFlame.zoomName()));
        // The icicle view puts the root on top; the flame view at the bottom.
        say('flame_root_y', (await page.evaluate(() => window.tperfFlame.frameRect('all'))).y);
        await page.click('#toggle-view');
        say('icicle_root_y', (await page.evaluate(() => window.tperfFlame.frameRect('all'))).y);
        await page.click('#toggle-view');
      }
    }

    if (args.sort) {
      await page.click('#functions th[data-key="self"]');  // self is the default: toggles to ascending
      say('self_asc', (await tableColumn(page, 1)).join(','));
      await page.click('#functions th[data-key="self"]');
      say('self_desc', (await tableColumn(page, 1)).join(','));
      say('self_desc_names', (await tableColumn(page, 0)).slice(0, 5).join('|'));
      say('self_desc_shares', (await tableColumn(page, 2)).slice(0, 5).map((v) => (+v).toFixed(2)).join('|'));
      await page.click('#functions th[data-key="total"]');
      say('total_desc', (await tableColumn(page, 3)).join(','));
      say('total_desc_shares', (await tableColumn(page, 4)).slice(0, 5).map((v) => (+v).toFixed(2)).join('|'));
      // Selecting the top row fills the callers and callees.
      await page.click('#functions th[data-key="self"]');
      await page.click('#functions tbody tr');
      say('selected', await page.$eval('#selected-name', (e) => e.textContent));
      say('callers', await page.$$eval('#callers tr', (trs) => trs.map((tr) => tr.children[0].textContent).join('|')));
      say('callees', await page.$$eval('#callees tr', (trs) => trs.map((tr) => tr.children[0].textContent).join('|')));
    }

    if (args.search) {
      await page.click('#search');
      await page.keyboard.type(args.search);
      // The page searches as the text is typed (debounced): wait for the shares of the whole
      // text, not those of a prefix (a run once read "^(w"'s 0 matches).
      await page.waitForFunction((want) => document.getElementById('search-info').dataset.query === want,
        { timeout: 10000 }, args.search);
      const info = await page.$eval('#search-info', (e) => ({ text: e.textContent, self: e.dataset.selfShare, total: e.dataset.totalShare }));
      say('search_text', info.text);
      say('search_self', info.self);
      say('search_total', info.total);
      say('search_highlighted', (await canvasPixels(page)).highlighted);
      say('search_rows', (await tableColumn(page, 0)).join('|'));
    }

    if (args.screenshot) {
      // The viewport as a person sees it (a full-page capture resizes the window and with it the
      // graph's scrolling box).
      await page.evaluate(() => window.scrollTo(0, 0));
      await page.screenshot({ path: args.screenshot });
      say('screenshot', args.screenshot);
    }
    if (args.range) {
      // Back to the whole recording with the reset button.
      await page.click('#range-reset');
      say('range_after_reset', JSON.stringify(await page.evaluate(() => window.tperfFlame.range())));
      say('reset_total', await page.evaluate(() => window.tperfFlame.total()));
    }
    say('page_errors', errors.length);
    errors.forEach((e) => say('page_error', e));
  } finally {
    await browser.close();
    fs.rmSync(userDir, { recursive: true, force: true });
  }
}

main().catch((e) => {
  say('error', e && e.stack ? e.stack : e);
  process.exit(1);
});
