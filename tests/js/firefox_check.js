// Structural checks of a Firefox Profiler file in the Gecko profile format, as the profiler's
// processing step relies on them (the profiler itself is not at hand here), then a summary:
//   thread PID TID NAME SAMPLES      one line per thread
//   self TID FUNCTION COUNT          samples per leaf function ("name (in dso)" -> name)
//   lib NAME BREAKPAD_ID CODE_ID
// Exits 1 with the first broken invariant.
// Usage: node firefox_check.js FILE.json
'use strict';
const fs = require('fs');

function fail(message) {
  console.error('firefox_check: ' + message);
  process.exit(1);
}
function check(cond, message) {
  if (!cond) fail(message);
}
const isIndex = (v, n) => Number.isInteger(v) && v >= 0 && v < n;

const profile = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
const meta = profile.meta;
check(meta && Number.isInteger(meta.version) && meta.version >= 1, 'meta.version is not a version number');
check(typeof meta.interval === 'number' && meta.interval > 0, 'meta.interval is not a positive number');
check(typeof meta.startTime === 'number', 'meta.startTime is not a number');
check(Array.isArray(meta.categories) && meta.categories.length > 0, 'meta.categories is empty');
for (const c of meta.categories) {
  check(typeof c.name === 'string' && typeof c.color === 'string' && Array.isArray(c.subcategories) &&
        c.subcategories.length > 0, 'a category lacks name, color or subcategories');
}
check(Array.isArray(profile.libs) && Array.isArray(profile.threads) && Array.isArray(profile.processes),
      'libs, threads or processes is not an array');
const out = [];
for (const lib of profile.libs) {
  check(typeof lib.name === 'string' && typeof lib.path === 'string' && typeof lib.debugName === 'string',
        'a lib lacks its names');
  check(Number.isFinite(lib.start) && Number.isFinite(lib.end) && lib.start <= lib.end, `lib ${lib.name}: start > end`);
  check(lib.breakpadId === '' || /^[0-9A-F]{33}$/.test(lib.breakpadId), `lib ${lib.name}: breakpadId ${lib.breakpadId}`);
  check(lib.codeId === null || /^[0-9a-f]+$/.test(lib.codeId), `lib ${lib.name}: codeId ${lib.codeId}`);
  out.push(`lib ${lib.name} ${lib.breakpadId || '-'} ${lib.codeId || '-'}`);
}

// A table is {schema: {column: index}, data: [[...]]}: every row has every column.
function table(thread, name) {
  const t = thread[name];
  check(t && t.schema && Array.isArray(t.data), `thread ${thread.tid}: no ${name}`);
  const width = Object.keys(t.schema).length;
  const cols = Object.values(t.schema).sort((a, b) => a - b);
  check(cols.every((c, i) => c === i), `thread ${thread.tid}: ${name} schema columns are not 0..${width - 1}`);
  t.data.forEach((row, i) => check(Array.isArray(row) && row.length === width,
                                   `thread ${thread.tid}: ${name} row ${i} has ${row.length} columns, not ${width}`));
  return t;
}

const tids = new Set();
for (const th of profile.threads) {
  check(Number.isInteger(th.tid) && Number.isInteger(th.pid) && typeof th.name === 'string', 'a thread lacks tid, pid or name');
  check(Array.isArray(th.stringTable), `thread ${th.tid}: no stringTable`);
  const strings = th.stringTable;
  const frames = table(th, 'frameTable');
  const stacks = table(th, 'stackTable');
  const samples = table(th, 'samples');
  table(th, 'markers');
  const fs_ = frames.schema, ss = stacks.schema, sm = samples.schema;
  frames.data.forEach((f, i) => {
    check(isIndex(f[fs_.location], strings.length), `thread ${th.tid}: frame ${i} location out of range`);
    check(isIndex(f[fs_.category], meta.categories.length), `thread ${th.tid}: frame ${i} category out of range`);
    check(f[fs_.line] === null || (Number.isInteger(f[fs_.line]) && f[fs_.line] > 0), `thread ${th.tid}: frame ${i} line`);
  });
  // A stack's prefix comes before it: the profiler builds its tables in one pass in that order.
  stacks.data.forEach((s, i) => {
    check(s[ss.prefix] === null || isIndex(s[ss.prefix], i), `thread ${th.tid}: stack ${i} prefix ${s[ss.prefix]}`);
    check(isIndex(s[ss.frame], frames.data.length), `thread ${th.tid}: stack ${i} frame out of range`);
  });
  let last = -Infinity;
  const self = new Map();
  samples.data.forEach((s, i) => {
    const stack = s[sm.stack], time = s[sm.time];
    check(stack === null || isIndex(stack, stacks.data.length), `thread ${th.tid}: sample ${i} stack out of range`);
    check(typeof time === 'number' && time >= last, `thread ${th.tid}: sample ${i} time ${time} before ${last}`);
    last = time;
    let name = '-';
    if (stack !== null) {
      name = strings[frames.data[stacks.data[stack][ss.frame]][fs_.location]].replace(/ \(in [^)]*\)$/, '');
    }
    self.set(name, (self.get(name) || 0) + 1);
  });
  tids.add(`${th.tid} ${th.name}`);
  out.push(`thread ${th.pid} ${th.tid} ${th.name} ${samples.data.length}`);
  for (const [name, count] of [...self.entries()].sort()) out.push(`self ${th.tid} ${name} ${count}`);
}
check(tids.size === profile.threads.length, 'two threads with the same tid and name');
process.stdout.write(out.join('\n') + '\n');
