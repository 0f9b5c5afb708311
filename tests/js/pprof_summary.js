// Decodes a gzipped pprof file with the pprof-format package (an encoder/decoder apart from
// tperf's) and prints what the tests compare, one fact per line:
//   sample_type TYPE/UNIT ...          default_sample_type TYPE
//   period_type TYPE/UNIT PERIOD       time_nanos N duration_nanos N
//   mapping FILENAME BUILD_ID START LIMIT OFFSET
//   stack LABELS ROOT;...;LEAF VALUES  (functions of each location's lines, root first; sorted)
//   self FUNCTION VALUES               (values summed by the function the leaf address is in:
//                                       the leaf location's last line, perf's -s sym entry)
// Usage: node pprof_summary.js FILE.pb.gz
'use strict';
const fs = require('fs');
const zlib = require('zlib');
const { Profile } = require('pprof-format');

const raw = zlib.gunzipSync(fs.readFileSync(process.argv[2]));
const p = Profile.decode(raw);
const str = (i) => p.stringTable.strings[Number(i)];
const out = [];
out.push('sample_type ' + p.sampleType.map((t) => `${str(t.type)}/${str(t.unit)}`).join(' '));
out.push('default_sample_type ' + str(p.defaultSampleType));
if (p.periodType) out.push(`period_type ${str(p.periodType.type)}/${str(p.periodType.unit)} ${p.period}`);
out.push(`time_nanos ${p.timeNanos} duration_nanos ${p.durationNanos}`);
for (const m of p.mapping) {
  out.push(`mapping ${str(m.filename)} ${str(m.buildId) || '-'} ${m.memoryStart} ${m.memoryLimit} ${m.fileOffset}`);
}
const functions = new Map(p.function.map((f) => [Number(f.id), f]));
const locations = new Map(p.location.map((l) => [Number(l.id), l]));
const stacks = [];
const self = new Map();
for (const s of p.sample) {
  const names = [];
  for (const id of s.locationId) {
    const loc = locations.get(Number(id));
    if (!loc) throw new Error(`sample refers to missing location ${id}`);
    for (const line of loc.line) {
      const f = functions.get(Number(line.functionId));
      if (!f) throw new Error(`location ${id} refers to missing function ${line.functionId}`);
      names.push(str(f.name) + (Number(line.line) ? `:${line.line}` : ''));
    }
  }
  const labels = s.label.map((l) => `${str(l.key)}=${Number(l.str) ? str(l.str) : l.num}`).join(',');
  const values = s.value.map(Number);
  stacks.push(`stack ${labels} ${names.reverse().join(';')} ${values.join(' ')}`);
  let leaf = '-';
  if (s.locationId.length) {
    const lines = locations.get(Number(s.locationId[0])).line;
    if (lines.length) leaf = str(functions.get(Number(lines[lines.length - 1].functionId)).name);
  }
  const acc = self.get(leaf) || values.map(() => 0);
  values.forEach((v, i) => (acc[i] += v));
  self.set(leaf, acc);
}
out.push(...stacks.sort());
for (const [name, values] of [...self.entries()].sort()) out.push(`self ${name} ${values.join(' ')}`);
process.stdout.write(out.join('\n') + '\n');
