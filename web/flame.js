// The tperf flame page. The profile arrives as the stack table (functions, frames, a call-site
// tree of stack nodes, counts per thread/event/stack), not one record per sample, so a file of
// millions of samples is a few arrays. The page merges the call sites by function into one tree
// (structure built once), then per filter only re-adds the counts and re-draws on a canvas: a
// DOM element per frame would not stay responsive at 100k frames.
'use strict';
(function () {
  const data = JSON.parse(document.getElementById('tperf-profile').textContent);

  const KIND_USER = 0, KIND_KERNEL = 1, KIND_INLINED = 2, KIND_UNKNOWN = 3;
  const ROW = 17;  // px per frame row
  const MIN_WIDTH = 0.4;  // px: narrower frames are not drawn (nor their callees)
  const FONT = '11px ui-monospace, "DejaVu Sans Mono", Menlo, Consolas, monospace';

  // ---- the merged tree ----------------------------------------------------------------------
  // Frames without a function (none should come, but a stack table may have them) share one
  // extra "[unknown]" function so every node has a name.
  const fnNames = data.functions.name.slice();
  const unknownFn = fnNames.length;
  fnNames.push('[unknown]');
  const fnFiles = data.functions.file;
  const frameFn = data.frames.function;
  const frameKind = data.frames.kind;
  const frameMapping = data.frames.mapping;
  const stackParent = data.stacks.parent;
  const stackFrame = data.stacks.frame;
  const nStacks = stackParent.length;

  // Node 0 is the root ("all"); a node is (parent node, function): the same function reached
  // through the same functions is one node whatever addresses or processes the samples had.
  const nodeParent = [-1], nodeFn = [-1], nodeKind = [KIND_USER], nodeDepth = [0], nodeMapping = [-1];
  const childKey = new Map();
  const fnCount = fnNames.length;
  const stackNode = new Int32Array(nStacks).fill(-1);
  {
    const path = [];
    for (let s = 0; s < nStacks; s++) {
      if (stackNode[s] >= 0) continue;
      // Walk up to a resolved ancestor (or the root), then resolve on the way back down, so a
      // parent listed after its child is still fine and no recursion is needed for deep stacks.
      let t = s;
      while (t >= 0 && stackNode[t] < 0) { path.push(t); t = stackParent[t]; }
      let parentNode = t >= 0 ? stackNode[t] : 0;
      while (path.length) {
        const u = path.pop();
        const frame = stackFrame[u];
        let fn = frame >= 0 ? frameFn[frame] : -1;
        if (fn < 0 || fn >= unknownFn) fn = unknownFn;
        const key = parentNode * fnCount + fn;
        let node = childKey.get(key);
        if (node === undefined) {
          node = nodeParent.length;
          childKey.set(key, node);
          nodeParent.push(parentNode);
          nodeFn.push(fn);
          nodeKind.push(frame >= 0 ? frameKind[frame] : KIND_UNKNOWN);
          nodeMapping.push(frame >= 0 ? frameMapping[frame] : -1);
          nodeDepth.push(nodeDepth[parentNode] + 1);
        }
        stackNode[u] = node;
        parentNode = node;
      }
    }
  }
  childKey.clear();
  const nNodes = nodeParent.length;
  // Children in CSR form; parents always have smaller ids than their children (made above).
  const childStart = new Int32Array(nNodes + 1);
  const children = new Int32Array(Math.max(nNodes - 1, 0));
  {
    const counts = new Int32Array(nNodes);
    for (let n = 1; n < nNodes; n++) counts[nodeParent[n]]++;
    for (let n = 0; n < nNodes; n++) childStart[n + 1] = childStart[n] + counts[n];
    const fill = childStart.slice(0, nNodes);
    for (let n = 1; n < nNodes; n++) children[fill[nodeParent[n]]++] = n;
  }
  function nodeName(n) { return n === 0 ? 'all' : fnNames[nodeFn[n]]; }
  // A function's kind for the table: that of its first call site (a name is kernel or user code
  // wherever it is called from).
  const fnKind = new Int8Array(fnCount).fill(-1);
  for (let n = nNodes - 1; n > 0; n--) fnKind[nodeFn[n]] = nodeKind[n];
  const KIND_CLASS = ['', 'kind-kernel', 'kind-inlined', 'kind-unknown'];

  // ---- filters and weights ------------------------------------------------------------------
  const threads = data.threads, events = data.events, counts = data.counts;
  const nCounts = counts.stack.length;
  const $ = (id) => document.getElementById(id);
  const eventSel = $('event'), processSel = $('process'), threadSel = $('thread'), metricSel = $('metric');

  function option(sel, value, text) {
    const o = document.createElement('option');
    o.value = String(value);
    o.textContent = text;
    sel.appendChild(o);
  }
  {
    const perEvent = new Float64Array(events.name.length);
    for (let i = 0; i < nCounts; i++) perEvent[counts.event[i]] += counts.samples[i];
    let best = 0;
    for (let e = 0; e < events.name.length; e++) {
      option(eventSel, e, `${events.name[e]} (${fmtInt(perEvent[e])} samples)`);
      if (perEvent[e] > perEvent[best]) best = e;
    }
    eventSel.value = String(best);
  }
  const pidComm = new Map();
  for (let t = 0; t < threads.tid.length; t++) {
    // A process is named after its main thread when there is one, else its first thread.
    const pid = threads.pid[t];
    if (!pidComm.has(pid) || threads.tid[t] === pid) pidComm.set(pid, threads.comm[t]);
  }
  function fillProcesses() {
    const perPid = new Map();
    const ev = +eventSel.value;
    for (let i = 0; i < nCounts; i++) {
      if (counts.event[i] !== ev) continue;
      const pid = threads.pid[counts.thread[i]];
      perPid.set(pid, (perPid.get(pid) || 0) + counts.samples[i]);
    }
    const keep = processSel.value;
    processSel.textContent = '';
    option(processSel, 'all', 'all processes');
    [...perPid.entries()].sort((a, b) => b[1] - a[1]).forEach(([pid, n]) =>
      option(processSel, pid, `${pidComm.get(pid)} [${pid}] (${fmtInt(n)})`));
    processSel.value = [...processSel.options].some((o) => o.value === keep) ? keep : 'all';
  }
  function fillThreads() {
    const ev = +eventSel.value;
    const pid = processSel.value === 'all' ? null : +processSel.value;
    const perThread = new Map();
    for (let i = 0; i < nCounts; i++) {
      if (counts.event[i] !== ev) continue;
      const t = counts.thread[i];
      if (pid !== null && threads.pid[t] !== pid) continue;
      perThread.set(t, (perThread.get(t) || 0) + counts.samples[i]);
    }
    const keep = threadSel.value;
    threadSel.textContent = '';
    option(threadSel, 'all', 'all threads');
    [...perThread.entries()].sort((a, b) => b[1] - a[1]).forEach(([t, n]) =>
      option(threadSel, threads.tid[t], `${threads.comm[t]} ${threads.pid[t]}/${threads.tid[t]} (${fmtInt(n)})`));
    threadSel.value = [...threadSel.options].some((o) => o.value === keep) ? keep : 'all';
  }

  // The timeline's data (absent when the samples had no times) and the selected time range:
  // null, or the first and last bucket of it.
  const tl = data.timeline && data.timeline.buckets > 0 ? data.timeline : null;
  let range = null;
  let foldedInRange = 0;  // of the range's total, what the page keeps without its stacks

  let nodeSelf, nodeTotal, nodeSamples;  // per node, for the current filter and measure
  let fnSelf, fnTotal;                    // per function (total counts a recursive function once)
  let grandTotal = 0;
  function unitName() {
    if (metricSel.value === 'samples') return 'samples';
    const u = events.unit[+eventSel.value];
    return u === 'nanoseconds' ? 'ns' : (u || 'period');
  }

  function computeWeights() {
    const ev = +eventSel.value;
    const pid = processSel.value === 'all' ? null : +processSel.value;
    const tid = threadSel.value === 'all' ? null : +threadSel.value;
    const bySamples = metricSel.value === 'samples';
    nodeSelf = new Float64Array(nNodes);
    nodeSamples = new Float64Array(nNodes);
    const add = (i, samples, weight) => {
      if (counts.event[i] !== ev) return;
      const t = counts.thread[i];
      if (pid !== null && threads.pid[t] !== pid) return;
      if (tid !== null && threads.tid[t] !== tid) return;
      const s = counts.stack[i];
      // A sample without any frame counts in the total, on the root itself.
      const n = s >= 0 ? stackNode[s] : 0;
      nodeSelf[n] += bySamples ? samples : weight;
      nodeSamples[n] += samples;
    };
    foldedInRange = 0;
    if (range !== null) {
      // A time range: the counts of its buckets' cells, with the same filters.
      const cells = tl.cells;
      for (let k = cells.start[range[0]]; k < cells.start[range[1] + 1]; k++) {
        add(cells.count[k], cells.samples[k], cells.weight[k]);
      }
      // Cells folded to bound the page: their thread and event, their stacks not kept (the root).
      const fo = tl.folded;
      if (fo) {
        for (let k = fo.start[range[0]]; k < fo.start[range[1] + 1]; k++) {
          if (fo.event[k] !== ev) continue;
          const t = fo.thread[k];
          if (pid !== null && threads.pid[t] !== pid) continue;
          if (tid !== null && threads.tid[t] !== tid) continue;
          nodeSelf[0] += bySamples ? fo.samples[k] : fo.weight[k];
          nodeSamples[0] += fo.samples[k];
          foldedInRange += bySamples ? fo.samples[k] : fo.weight[k];
        }
      }
    } else {
      for (let i = 0; i < nCounts; i++) add(i, counts.samples[i], counts.weight[i]);
    }
    nodeTotal = nodeSelf.slice();
    const totalSamples = nodeSamples;
    for (let n = nNodes - 1; n > 0; n--) {
      nodeTotal[nodeParent[n]] += nodeTotal[n];
      totalSamples[nodeParent[n]] += totalSamples[n];
    }
    // nodeSamples now holds inclusive sample counts (what the tooltip shows).
    grandTotal = nodeTotal[0];
    // Heaviest child first, so the drawing can stop at the first child too narrow to see.
    for (let n = 0; n < nNodes; n++) {
      const a = childStart[n], b = childStart[n + 1];
      if (b - a > 1) {
        const sorted = Array.from(children.subarray(a, b)).sort((x, y) => nodeTotal[y] - nodeTotal[x] || x - y);
        children.set(sorted, a);
      }
    }
    fnSelf = new Float64Array(fnCount);
    fnTotal = new Float64Array(fnCount);
    // Depth-first with the number of times each function is on the path, so a recursive
    // function's total counts its outermost call only.
    const onPath = new Int32Array(fnCount);
    const stack = [0];
    while (stack.length) {
      const n = stack.pop();
      if (n < 0) { onPath[nodeFn[~n]]--; continue; }
      if (nodeTotal[n] === 0) continue;
      if (n !== 0) {
        const f = nodeFn[n];
        fnSelf[f] += nodeSelf[n];
        if (onPath[f] === 0) fnTotal[f] += nodeTotal[n];
        onPath[f]++;
        stack.push(~n);
      }
      for (let i = childStart[n]; i < childStart[n + 1]; i++) stack.push(children[i]);
    }
  }

  // ---- drawing ------------------------------------------------------------------------------
  const canvas = $('graph');
  const ctx = canvas.getContext('2d');
  const tooltip = $('tooltip');
  let icicle = false;
  let zoom = 0;          // the node that spans the width
  let matchFn = null;    // Uint8Array per function when a search is active
  let selectedFn = -1;
  // What the last draw put where, for hit testing: parallel arrays.
  let drawnX = [], drawnY = [], drawnW = [], drawnNode = [];
  let cssWidth = 0, levels = 0;
  let scrollToRoots = true;  // after a zoom or a change of view

  function hashName(s) {
    let h = 2166136261;
    for (let i = 0; i < s.length; i++) { h ^= s.charCodeAt(i); h = Math.imul(h, 16777619); }
    return (h >>> 0) / 4294967296;
  }
  // Colours say what kind of code a frame is; the name's hash varies the shade so neighbours
  // stay apart.
  function colour(n) {
    if (n === 0) return '#c9c4d6';
    const v = hashName(fnNames[nodeFn[n]]);
    switch (nodeKind[n]) {
      case KIND_KERNEL: return `hsl(${205 + 15 * v}, 55%, ${64 + 8 * v}%)`;
      case KIND_INLINED: return `hsl(${160 + 20 * v}, 45%, ${58 + 10 * v}%)`;
      case KIND_UNKNOWN: return `hsl(0, 0%, ${70 + 8 * v}%)`;
      default: return `hsl(${8 + 42 * v}, ${72 + 12 * v}%, ${58 + 8 * v}%)`;
    }
  }

  // The deepest level drawn below the zoomed node: frames too narrow to draw do not count, so one
  // deep sample does not leave the graph mostly empty.
  function maxDepthUnder(root, scale) {
    let max = nodeDepth[root];
    const stack = [root];
    while (stack.length) {
      const n = stack.pop();
      if (nodeDepth[n] > max) max = nodeDepth[n];
      for (let i = childStart[n]; i < childStart[n + 1]; i++) {
        if (nodeTotal[children[i]] * scale < MIN_WIDTH) break;  // heaviest first
        stack.push(children[i]);
      }
    }
    return max;
  }

  function render() {
    const dpr = window.devicePixelRatio || 1;
    cssWidth = Math.max(200, canvas.parentElement.clientWidth);
    levels = maxDepthUnder(zoom, nodeTotal[zoom] > 0 ? cssWidth / nodeTotal[zoom] : 0) + 1;
    const cssHeight = levels * ROW + 4;
    // A redraw (search, filter, resize) keeps the view where it was relative to the roots: the
    // bottom of a flame graph, the top of an icicle.
    const box = canvas.parentElement;
    const fromBottom = box.scrollHeight - box.scrollTop;
    canvas.style.height = cssHeight + 'px';
    canvas.width = Math.round(cssWidth * dpr);
    canvas.height = Math.round(cssHeight * dpr);
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.clearRect(0, 0, cssWidth, cssHeight);
    ctx.font = FONT;
    ctx.textBaseline = 'middle';
    const charW = ctx.measureText('mmmmmmmmmm').width / 10;
    drawnX = []; drawnY = []; drawnW = []; drawnNode = [];
    const yOf = (depth) => (icicle ? depth * ROW : (levels - 1 - depth) * ROW) + 2;

    const drawFrame = (n, x, w) => {
      const y = yOf(nodeDepth[n]);
      const matched = matchFn !== null && n !== 0 && matchFn[nodeFn[n]];
      ctx.fillStyle = matched ? '#d62fd0' : colour(n);
      ctx.fillRect(x, y, Math.max(w - (w > 3 ? 1 : 0), 0.5), ROW - 1);
      if (n !== 0 && nodeFn[n] === selectedFn) {
        ctx.strokeStyle = '#222';
        ctx.lineWidth = 1.5;
        ctx.strokeRect(x + 0.75, y + 0.75, Math.max(w - 2.5, 0.5), ROW - 2.5);
      }
      drawnX.push(x); drawnY.push(y); drawnW.push(w); drawnNode.push(n);
      const room = Math.floor((w - 6) / charW);
      if (room >= 2) {
        let label = nodeName(n);
        if (label.length > room) label = label.slice(0, room - 1) + '\u2026';
        ctx.fillStyle = matched ? '#fff' : '#111';
        ctx.fillText(label, x + 3, y + ROW / 2);
      }
    };

    if (nodeTotal[0] === 0) {
      ctx.fillStyle = '#666';
      ctx.fillText('no samples' + (nCounts ? ' for this event, process and thread' : ' in this recording'), 8, ROW / 2 + 2);
      drawnX = []; drawnY = []; drawnW = []; drawnNode = [];
      canvas.dataset.drawn = '0';
      renderBreadcrumb();
      return;
    }
    // The zoomed node's callers keep the full width, as a path back.
    for (let a = nodeParent[zoom]; a >= 0; a = nodeParent[a]) drawFrame(a, 0, cssWidth);
    const total = nodeTotal[zoom];
    if (total > 0) {
      const scale = cssWidth / total;
      const stack = [zoom, 0];
      while (stack.length) {
        const x = stack.pop(), n = stack.pop();
        const w = nodeTotal[n] * scale;
        drawFrame(n, x, w);
        // Children sit left-aligned over the parent, heaviest first; the parent's own samples
        // are the gap on the right.
        let cx = x;
        for (let i = childStart[n]; i < childStart[n + 1]; i++) {
          const c = children[i];
          const cw = nodeTotal[c] * scale;
          if (cw < MIN_WIDTH) break;  // sorted heaviest first: the rest are narrower still
          stack.push(c, cx);
          cx += cw;
        }
      }
    }
    canvas.dataset.drawn = String(drawnNode.length);
    if (scrollToRoots) {
      box.scrollTop = icicle ? 0 : box.scrollHeight;
      scrollToRoots = false;
    } else if (!icicle) {
      box.scrollTop = box.scrollHeight - fromBottom;
    }
    renderBreadcrumb();
  }

  function renderBreadcrumb() {
    const nav = $('breadcrumb');
    nav.textContent = '';
    const path = [];
    for (let a = zoom; a >= 0; a = nodeParent[a]) path.push(a);
    path.reverse().forEach((n, i) => {
      if (i) { const s = document.createElement('span'); s.className = 'sep'; s.textContent = '\u203a'; nav.appendChild(s); }
      const b = document.createElement('button');
      b.type = 'button';
      b.textContent = nodeName(n);
      b.title = `${nodeName(n)}: ${pct(nodeTotal[n])}`;
      b.addEventListener('click', () => { zoom = n; scrollToRoots = true; render(); });
      nav.appendChild(b);
    });
  }

  function hit(ev) {
    const r = canvas.getBoundingClientRect();
    const x = ev.clientX - r.left, y = ev.clientY - r.top;
    for (let i = drawnNode.length - 1; i >= 0; i--) {
      if (y >= drawnY[i] && y < drawnY[i] + ROW && x >= drawnX[i] && x < drawnX[i] + drawnW[i]) return drawnNode[i];
    }
    return -1;
  }

  canvas.addEventListener('click', (ev) => {
    const n = hit(ev);
    if (n < 0) return;
    zoom = n;
    scrollToRoots = true;
    if (n !== 0) select(nodeFn[n]);
    render();
  });
  canvas.addEventListener('mousemove', (ev) => {
    const n = hit(ev);
    if (n < 0) { tooltip.hidden = true; return; }
    const unit = unitName();
    const lines = [nodeName(n)];
    if (n !== 0) {
      const kind = ['user', 'kernel', 'inlined', 'unknown'][nodeKind[n]] || 'user';
      const map = nodeMapping[n] >= 0 ? data.mappings[nodeMapping[n]] : '';
      lines.push(`${kind}${map ? ' \u00b7 ' + map : ''}`);
    }
    lines.push(`${fmtInt(nodeSamples[n])} samples \u00b7 ${pct(nodeTotal[n])} of all` +
      (zoom !== 0 && n !== zoom ? ` \u00b7 ${share(nodeTotal[n], nodeTotal[zoom])} of zoom` : ''));
    lines.push(`total ${fmtInt(nodeTotal[n])} ${unit}, self ${fmtInt(nodeSelf[n])} ${unit}`);
    tooltip.textContent = lines.join('\n');
    tooltip.hidden = false;
    const tx = Math.min(ev.clientX + 14, window.innerWidth - tooltip.offsetWidth - 8);
    tooltip.style.left = Math.max(4, tx) + 'px';
    tooltip.style.top = (ev.clientY + 16) + 'px';
  });
  canvas.addEventListener('mouseleave', () => { tooltip.hidden = true; });
  document.addEventListener('keydown', (ev) => {
    if (ev.key === 'Escape' && document.activeElement !== $('search')) { zoom = 0; render(); }
  });

  $('toggle-view').addEventListener('click', () => {
    icicle = !icicle;
    scrollToRoots = true;
    $('toggle-view').textContent = icicle ? 'flame view' : 'icicle view';
    render();
  });

  // ---- numbers ------------------------------------------------------------------------------
  function fmtInt(v) { return Math.round(v).toLocaleString('en-US'); }
  function share(v, of) { return of > 0 ? (100 * v / of).toFixed(2) + '%' : '0.00%'; }
  function pct(v) { return share(v, grandTotal); }

  // ---- search -------------------------------------------------------------------------------
  const searchBox = $('search'), searchInfo = $('search-info');
  function compileSearch(text) {
    if (!text) return null;
    try { return new RegExp(text); } catch (e) {
      // Not a valid regex ("operator()(" ...): match the text as it is.
      return { test: (s) => s.includes(text) };
    }
  }
  function applySearch() {
    const re = compileSearch(searchBox.value);
    if (re === null) {
      matchFn = null;
      searchInfo.textContent = '';
      delete searchInfo.dataset.totalShare;
      delete searchInfo.dataset.selfShare;
      delete searchInfo.dataset.query;
      return;
    }
    matchFn = new Uint8Array(fnCount);
    let nFns = 0;
    for (let f = 0; f < fnCount; f++) if (re.test(fnNames[f])) { matchFn[f] = 1; nFns++; }
    // Total: samples with a matching frame anywhere on their stack, each counted once (a match
    // under a match is already inside it). Self: samples whose innermost frame matches, which
    // is perf report --no-children's share of the function.
    let inclusive = 0, self = 0;
    const stack = [0];
    while (stack.length) {
      const n = stack.pop();
      if (n !== 0 && matchFn[nodeFn[n]]) {
        inclusive += nodeTotal[n];
        const s2 = [n];
        while (s2.length) {
          const m = s2.pop();
          if (matchFn[nodeFn[m]]) self += nodeSelf[m];
          for (let i = childStart[m]; i < childStart[m + 1]; i++) s2.push(children[i]);
        }
        continue;
      }
      for (let i = childStart[n]; i < childStart[n + 1]; i++) stack.push(children[i]);
    }
    const totalShare = grandTotal > 0 ? 100 * inclusive / grandTotal : 0;
    const selfShare = grandTotal > 0 ? 100 * self / grandTotal : 0;
    searchInfo.dataset.totalShare = totalShare.toFixed(2);
    searchInfo.dataset.selfShare = selfShare.toFixed(2);
    searchInfo.dataset.query = searchBox.value;  // what these shares are for
    searchInfo.textContent = `${nFns} function${nFns === 1 ? '' : 's'} match: ` +
      `${totalShare.toFixed(2)}% of all (self ${selfShare.toFixed(2)}%)`;
  }
  let searchTimer = 0;
  searchBox.addEventListener('input', () => {
    clearTimeout(searchTimer);
    searchTimer = setTimeout(() => { applySearch(); render(); renderTable(); }, 120);
  });

  // ---- function table and callers/callees ---------------------------------------------------
  let sortKey = 'self', sortDesc = true;
  const TABLE_ROWS = 400;  // the heaviest rows; more would only slow the page down
  function renderTable() {
    const rows = [];
    for (let f = 0; f < fnCount; f++) {
      if (fnTotal[f] === 0 && fnSelf[f] === 0) continue;
      if (matchFn !== null && !matchFn[f]) continue;
      rows.push(f);
    }
    const val = (f) => {
      switch (sortKey) {
        case 'name': return fnNames[f];
        case 'self': case 'selfShare': return fnSelf[f];
        default: return fnTotal[f];
      }
    };
    rows.sort((a, b) => {
      const va = val(a), vb = val(b);
      let c = typeof va === 'string' ? va.localeCompare(vb) : va - vb;
      if (sortDesc) c = -c;
      return c || fnNames[a].localeCompare(fnNames[b]);
    });
    const tbody = document.querySelector('#functions tbody');
    tbody.textContent = '';
    const frag = document.createDocumentFragment();
    for (const f of rows.slice(0, TABLE_ROWS)) {
      const tr = document.createElement('tr');
      tr.dataset.fn = String(f);
      if (f === selectedFn) tr.className = 'selected';
      cell(tr, fnNames[f], `name ${KIND_CLASS[fnKind[f]] || ''}`, null, fnFiles[f] || '');
      cell(tr, fmtInt(fnSelf[f]), 'num', fnSelf[f]);
      cell(tr, pct(fnSelf[f]), 'num', grandTotal > 0 ? 100 * fnSelf[f] / grandTotal : 0);
      cell(tr, fmtInt(fnTotal[f]), 'num', fnTotal[f]);
      cell(tr, pct(fnTotal[f]), 'num', grandTotal > 0 ? 100 * fnTotal[f] / grandTotal : 0);
      tr.addEventListener('click', () => { select(f); render(); });
      frag.appendChild(tr);
    }
    tbody.appendChild(frag);
    $('table-note').textContent = `${rows.length > TABLE_ROWS ? `heaviest ${TABLE_ROWS} of ` : ''}${fmtInt(rows.length)} functions, in ${unitName()}`;
    document.querySelectorAll('#functions th').forEach((th) => {
      th.className = th.classList.contains('num') ? 'num' : 'name';
      const k = th.dataset.key;
      const same = k === sortKey || (k === 'selfShare' && sortKey === 'self') || (k === 'totalShare' && sortKey === 'total');
      if (same) th.classList.add(sortDesc ? 'sorted-desc' : 'sorted-asc');
    });
  }
  function cell(tr, text, cls, value, title) {
    const td = document.createElement('td');
    td.className = cls;
    td.textContent = text;
    if (value !== null && value !== undefined) td.dataset.value = String(value);
    if (title) td.title = title;
    tr.appendChild(td);
  }
  document.querySelectorAll('#functions th').forEach((th) => {
    th.addEventListener('click', () => {
      let k = th.dataset.key;
      if (k === 'selfShare') k = 'self';
      if (k === 'totalShare') k = 'total';
      if (k === sortKey) sortDesc = !sortDesc;
      else { sortKey = k; sortDesc = k !== 'name'; }
      renderTable();
    });
  });

  function select(f) {
    selectedFn = f;
    document.querySelectorAll('#functions tbody tr').forEach((tr) => {
      tr.className = +tr.dataset.fn === f ? 'selected' : '';
    });
    renderRelations();
  }
  function renderRelations() {
    const f = selectedFn;
    $('selected-name').textContent = f >= 0 ? fnNames[f] : '(click a frame or a row)';
    const callers = new Map(), callees = new Map();
    if (f >= 0) {
      // Each call of f counted once: nodes of f with no f among their callers (the recursion
      // inside is the same time again).
      const stack = [0];
      let depthOfF = 0;
      while (stack.length) {
        const n = stack.pop();
        if (n < 0) { depthOfF--; continue; }
        if (nodeTotal[n] === 0) continue;
        const isF = n !== 0 && nodeFn[n] === f;
        if (isF) {
          if (depthOfF === 0) {
            const p = nodeParent[n];
            const key = p === 0 ? -1 : nodeFn[p];
            callers.set(key, (callers.get(key) || 0) + nodeTotal[n]);
          }
          for (let i = childStart[n]; i < childStart[n + 1]; i++) {
            const c = children[i];
            if (nodeFn[c] === f || nodeTotal[c] === 0) continue;
            callees.set(nodeFn[c], (callees.get(nodeFn[c]) || 0) + nodeTotal[c]);
          }
          depthOfF++;
          stack.push(~n);
        }
        for (let i = childStart[n]; i < childStart[n + 1]; i++) stack.push(children[i]);
      }
    }
    fillRelation('callers', callers);
    fillRelation('callees', callees);
  }
  function fillRelation(id, map) {
    const tbody = document.querySelector(`#${id} tbody`);
    tbody.textContent = '';
    const rows = [...map.entries()].sort((a, b) => b[1] - a[1]).slice(0, 50);
    if (!rows.length) {
      const tr = document.createElement('tr');
      cell(tr, selectedFn >= 0 ? 'none' : '', 'name');
      tbody.appendChild(tr);
      return;
    }
    for (const [g, w] of rows) {
      const tr = document.createElement('tr');
      cell(tr, g < 0 ? '(outermost frame: no caller)' : fnNames[g], 'name');
      cell(tr, pct(w), 'num', grandTotal > 0 ? 100 * w / grandTotal : 0);
      if (g >= 0) {
        tr.style.cursor = 'pointer';
        tr.addEventListener('click', () => { select(g); render(); });
      }
      tbody.appendChild(tr);
    }
  }

  // ---- header and unwinding summary ---------------------------------------------------------
  {
    const table = $('info');
    for (const [k, v] of data.info) {
      const tr = document.createElement('tr');
      cell(tr, k, 'key');
      cell(tr, v, 'value');
      table.appendChild(tr);
    }
    if (data.lost && !data.info.some(([k]) => k === 'lost samples')) {
      const tr = document.createElement('tr');
      cell(tr, 'lost samples', 'key');
      cell(tr, fmtInt(data.lost), 'value');
      table.appendChild(tr);
    }
    $('unwind').textContent = data.unwind || '(no unwinding summary)';
    if (!data.info.length && !data.lost) $('header-info').hidden = true;
  }

  // ---- timeline -----------------------------------------------------------------------------
  // One lane per thread (the busiest first, a few at a time) over the recording's time buckets:
  // running / runnable / sleeping bands where the file has sched_switch samples, else the
  // thread's samples per bucket; above them the density of the filtered samples. Dragging
  // across it selects a time range, which the graph, the table and the search then count.
  const tlBox = $('timeline-box'), tlCanvas = $('timeline'), tlCtx = tlCanvas.getContext('2d');
  const LABEL_W = 170, TL_TOP = 2, DENSITY_H = 28, LANE_H = 13, LANE_GAP = 3, AXIS_H = 16, LANES_STEP = 12;
  const COL_RUNNING = '#5fb760', COL_RUNNABLE = '#f0a030', COL_SLEEPING = '#8fb0d8', COL_DENSITY = '#6a55a8';
  let lanesShown = LANES_STEP;
  let lanes = [];            // thread indices in drawing order (those shown)
  let laneCandidates = 0;    // threads that could have a lane under the filters
  let laneDensity = null;    // thread -> Float64Array of samples per bucket (current event)
  let tlCssWidth = 0;
  let drag = null;           // {from, to} buckets while the mouse is down
  const spanNs = tl ? tl.buckets * tl.width : 0;
  function fmtTime(ns) {
    const total = tl ? tl.buckets * tl.width : 0;
    if (total >= 1e9) return (ns / 1e9).toFixed(3) + ' s';
    if (total >= 1e6) return (ns / 1e6).toFixed(2) + ' ms';
    return (ns / 1e3).toFixed(1) + ' \u00b5s';
  }
  const plotW = () => Math.max(tlCssWidth - LABEL_W - 8, 50);
  const bucketX = (b) => LABEL_W + (b / tl.buckets) * plotW();
  function bucketAt(x) {
    const b = Math.floor(((x - LABEL_W) / plotW()) * tl.buckets);
    return Math.min(Math.max(b, 0), tl.buckets - 1);
  }
  const laneY = (i) => TL_TOP + DENSITY_H + 4 + i * (LANE_H + LANE_GAP);
  const threadLabel = (t) => `${threads.comm[t]}-${threads.tid[t]}`;

  // Lanes are threads by tid: a thread whose comm changed (exec, prctl) is several threads of the
  // stack table and one lane, named by its last comm.
  const laneOfThread = new Int32Array(threads.tid.length);
  const laneThreads = [];  // lane key -> the thread indices in it, the last one naming it
  {
    const byTid = new Map();
    for (let t = 0; t < threads.tid.length; t++) {
      const key = `${threads.pid[t]}/${threads.tid[t]}`;
      let k = byTid.get(key);
      if (k === undefined) { k = laneThreads.length; byTid.set(key, k); laneThreads.push([]); }
      laneThreads[k].push(t);
      laneOfThread[t] = k;
    }
  }
  const laneName = (k) => laneThreads[k][laneThreads[k].length - 1];
  // Per lane: its off-CPU ns per bucket (runnable, sleeping) and when it was seen.
  const laneStates = new Map();
  const laneFirst = [], laneLast = [];
  if (tl) {
    const st = tl.states;
    for (let k = 0; k < st.thread.length; k++) {
      const l = laneOfThread[st.thread[k]];
      let s = laneStates.get(l);
      if (!s) { s = { runnable: new Float64Array(tl.buckets), sleeping: new Float64Array(tl.buckets), total: 0, sleepingNs: 0, runnableNs: 0 }; laneStates.set(l, s); }
      s.runnable[st.bucket[k]] += st.runnable[k];
      s.sleeping[st.bucket[k]] += st.sleeping[k];
      s.total += st.runnable[k] + st.sleeping[k];
      s.sleepingNs += st.sleeping[k];
      s.runnableNs += st.runnable[k];
    }
    for (let l = 0; l < laneThreads.length; l++) {
      let first = -1, last = -1;
      for (const t of laneThreads[l]) {
        const f = tl.threads.first[t], z = tl.threads.last[t];
        if (f >= 0 && (first < 0 || f < first)) first = f;
        if (z > last) last = z;
      }
      laneFirst.push(first);
      laneLast.push(last);
    }
  }

  // Samples of the current event per lane and bucket, and the lanes under the filters.
  function computeLanes() {
    const ev = +eventSel.value;
    const pid = processSel.value === 'all' ? null : +processSel.value;
    const tid = threadSel.value === 'all' ? null : +threadSel.value;
    laneDensity = new Map();
    const activity = new Map();
    const cells = tl.cells;
    for (let b = 0; b < tl.buckets; b++) {
      for (let k = cells.start[b]; k < cells.start[b + 1]; k++) {
        const i = cells.count[k];
        if (counts.event[i] !== ev) continue;
        const l = laneOfThread[counts.thread[i]];
        let d = laneDensity.get(l);
        if (!d) { d = new Float64Array(tl.buckets); laneDensity.set(l, d); }
        d[b] += cells.samples[k];
        activity.set(l, (activity.get(l) || 0) + cells.samples[k]);
      }
      const fo = tl.folded;
      if (fo) {
        for (let k = fo.start[b]; k < fo.start[b + 1]; k++) {
          if (fo.event[k] !== ev) continue;
          const l = laneOfThread[fo.thread[k]];
          let d = laneDensity.get(l);
          if (!d) { d = new Float64Array(tl.buckets); laneDensity.set(l, d); }
          d[b] += fo.samples[k];
          activity.set(l, (activity.get(l) || 0) + fo.samples[k]);
        }
      }
    }
    // Threads with off-CPU time but no sample of this event still get a lane, after the others.
    const cand = [];
    for (let l = 0; l < laneThreads.length; l++) {
      if (!activity.has(l) && !laneStates.has(l)) continue;
      const t = laneName(l);
      if (pid !== null && threads.pid[t] !== pid) continue;
      if (tid !== null && threads.tid[t] !== tid) continue;
      cand.push(l);
    }
    const off = (l) => (laneStates.has(l) ? laneStates.get(l).total : 0);
    cand.sort((a, b) => (activity.get(b) || 0) - (activity.get(a) || 0) || off(b) - off(a) ||
      threads.tid[laneName(a)] - threads.tid[laneName(b)]);
    laneCandidates = cand.length;
    lanes = cand.slice(0, lanesShown);
  }

  function renderTimeline() {
    if (!tl) return;
    computeLanes();
    const dpr = window.devicePixelRatio || 1;
    tlCssWidth = Math.max(300, tlCanvas.parentElement.clientWidth);
    const cssHeight = laneY(lanes.length) + AXIS_H;
    tlCanvas.style.height = cssHeight + 'px';
    tlCanvas.width = Math.round(tlCssWidth * dpr);
    tlCanvas.height = Math.round(cssHeight * dpr);
    const c = tlCtx;
    c.setTransform(dpr, 0, 0, dpr, 0, 0);
    c.clearRect(0, 0, tlCssWidth, cssHeight);
    c.font = FONT;
    c.textBaseline = 'middle';
    const B = tl.buckets, w = tl.width;
    // Bucket b covers whole pixels [colX(b), colX(b + 1)), at least one wide, so neighbouring
    // buckets meet without seams.
    const colX = (b) => Math.floor(bucketX(b));
    const colWidth = (b) => Math.max(1, colX(b + 1) - colX(b));
    // The density of the filtered samples (the measure of the page: samples or period).
    {
      const ev = +eventSel.value;
      const pid = processSel.value === 'all' ? null : +processSel.value;
      const tid = threadSel.value === 'all' ? null : +threadSel.value;
      const bySamples = metricSel.value === 'samples';
      const dens = new Float64Array(B);
      const cells = tl.cells;
      for (let b = 0; b < B; b++) {
        for (let k = cells.start[b]; k < cells.start[b + 1]; k++) {
          const i = cells.count[k];
          if (counts.event[i] !== ev) continue;
          const t = counts.thread[i];
          if (pid !== null && threads.pid[t] !== pid) continue;
          if (tid !== null && threads.tid[t] !== tid) continue;
          dens[b] += bySamples ? cells.samples[k] : cells.weight[k];
        }
        const fo = tl.folded;
        if (fo) {
          for (let k = fo.start[b]; k < fo.start[b + 1]; k++) {
            if (fo.event[k] !== ev) continue;
            const t = fo.thread[k];
            if (pid !== null && threads.pid[t] !== pid) continue;
            if (tid !== null && threads.tid[t] !== tid) continue;
            dens[b] += bySamples ? fo.samples[k] : fo.weight[k];
          }
        }
      }
      let max = 0;
      for (let b = 0; b < B; b++) if (dens[b] > max) max = dens[b];
      c.fillStyle = '#f4f2f8';
      c.fillRect(LABEL_W, TL_TOP, plotW(), DENSITY_H);
      c.fillStyle = COL_DENSITY;
      if (max > 0) {
        for (let b = 0; b < B; b++) {
          if (!dens[b]) continue;
          const h = Math.max(1, (dens[b] / max) * (DENSITY_H - 2));
          c.fillRect(colX(b), TL_TOP + DENSITY_H - h, colWidth(b), h);
        }
      }
      c.fillStyle = '#333';
      c.fillText('samples', 6, TL_TOP + DENSITY_H / 2);
    }
    // The lanes.
    lanes.forEach((l, li) => {
      const y = laneY(li);
      const t = laneName(l);
      c.fillStyle = '#333';
      let label = threadLabel(t);
      const room = Math.floor((LABEL_W - 10) / (c.measureText('m').width || 7));
      if (label.length > room) label = label.slice(0, room - 1) + '\u2026';
      c.fillText(label, 6, y + LANE_H / 2);
      c.fillStyle = '#f3f3f3';
      c.fillRect(LABEL_W, y, plotW(), LANE_H);
      const d = laneDensity.get(l);
      let dmax = 0;
      if (d) for (let b = 0; b < B; b++) if (d[b] > dmax) dmax = d[b];
      if (tl.hasStates) {
        const first = laneFirst[l], last = laneLast[l];
        const ls = laneStates.get(l);
        const bandH = LANE_H - 3;
        for (let b = 0; b < B; b++) {
          // The part of the bucket the thread was alive in, less its off-CPU time: running.
          const alive = first < 0 ? 0 : Math.max(0, Math.min(last + 1, (b + 1) * w) - Math.max(first, b * w));
          const fS = ls ? ls.sleeping[b] / w : 0, fR = ls ? ls.runnable[b] / w : 0;
          const fRun = Math.max(0, alive / w - fS - fR);
          let yy = y + bandH;
          const x = colX(b), colW = colWidth(b);
          for (const [f, col] of [[fRun, COL_RUNNING], [fR, COL_RUNNABLE], [fS, COL_SLEEPING]]) {
            if (f <= 0) continue;
            const h = Math.min(yy - y, f * bandH);
            c.fillStyle = col;
            c.fillRect(x, yy - h, colW, h);
            yy -= h;
          }
          // The thread's samples: a strip under the band, darker where denser.
          if (d && d[b] > 0) {
            c.fillStyle = `rgba(60, 40, 120, ${0.25 + 0.75 * d[b] / dmax})`;
            c.fillRect(x, y + bandH + 1, colW, 2);
          }
        }
      } else if (d && dmax > 0) {
        // No switch data: the thread ran where it has samples, as tall as their number.
        c.fillStyle = COL_RUNNING;
        for (let b = 0; b < B; b++) {
          if (!d[b]) continue;
          const h = Math.max(2, (d[b] / dmax) * LANE_H);
          c.fillRect(colX(b), y + LANE_H - h, colWidth(b), h);
        }
      }
    });
    // The time axis, relative to the first sample.
    {
      const y = laneY(lanes.length);
      c.fillStyle = '#555';
      c.strokeStyle = '#999';
      c.lineWidth = 1;
      const ticks = Math.max(2, Math.floor(plotW() / 120));
      for (let i = 0; i <= ticks; i++) {
        const x = LABEL_W + (i / ticks) * plotW();
        c.beginPath();
        c.moveTo(x + 0.5, y - 2);
        c.lineTo(x + 0.5, y + 3);
        c.stroke();
        const text = fmtTime((i / ticks) * spanNs);
        const tw = c.measureText(text).width;
        c.fillText(text, Math.min(Math.max(x - tw / 2, LABEL_W), tlCssWidth - tw - 2), y + 9);
      }
    }
    // The selection (or the one being dragged): the rest is shaded.
    const sel = drag ? [Math.min(drag.from, drag.to), Math.max(drag.from, drag.to)] : range;
    if (sel) {
      const x0 = bucketX(sel[0]), x1 = bucketX(sel[1] + 1);
      const h = laneY(lanes.length);
      c.fillStyle = 'rgba(40, 40, 60, 0.28)';
      c.fillRect(LABEL_W, 0, x0 - LABEL_W, h);
      c.fillRect(x1, 0, LABEL_W + plotW() - x1, h);
      c.strokeStyle = '#2a2270';
      c.lineWidth = 1.5;
      c.strokeRect(x0, 1, x1 - x0, h - 2);
    }
    // The lane controls.
    const more = $('lanes-more');
    const hidden = laneCandidates - lanes.length;
    more.hidden = laneCandidates <= LANES_STEP;
    more.textContent = hidden > 0 ? `show ${Math.min(hidden, LANES_STEP)} more (${hidden} of ${laneCandidates} threads hidden)`
      : 'show fewer threads';
    renderRangeInfo();
  }

  function renderRangeInfo() {
    const info = $('range-info'), reset = $('range-reset');
    reset.disabled = range === null;
    if (range === null) {
      info.textContent = `whole recording, ${fmtTime(spanNs)}: drag on the timeline to select a time range`;
      delete info.dataset.from;
      delete info.dataset.to;
      return;
    }
    const from = range[0] * tl.width, to = (range[1] + 1) * tl.width;
    info.dataset.from = String(from);
    info.dataset.to = String(to);
    info.textContent = `range ${fmtTime(from)} \u2013 ${fmtTime(to)} (${fmtTime(to - from)} of ${fmtTime(spanNs)})` +
      (foldedInRange > 0 ? ` \u00b7 ${pct(foldedInRange)} of it without stacks (shown on all: the page keeps the ` +
        'heaviest stacks of each time slice to stay small)' : '');
  }

  function setRange(r) {
    range = r;
    refresh();
  }
  if (tl) {
    tlBox.hidden = false;
    if (!tl.hasStates) {
      document.querySelector('#tl-legend .tl-states').hidden = true;
      $('tl-no-states').hidden = false;
    }
    const xOf = (ev) => ev.clientX - tlCanvas.getBoundingClientRect().left;
    tlCanvas.addEventListener('mousedown', (ev) => {
      if (ev.button !== 0 || xOf(ev) < LABEL_W) return;
      ev.preventDefault();
      const b = bucketAt(xOf(ev));
      drag = { from: b, to: b, x: ev.clientX };
    });
    window.addEventListener('mousemove', (ev) => {
      if (!drag) return;
      const b = bucketAt(xOf(ev));
      if (b !== drag.to) { drag.to = b; renderTimeline(); }
    });
    window.addEventListener('mouseup', (ev) => {
      if (!drag) return;
      const d = drag;
      drag = null;
      // A click without a drag selects nothing (a stray click must not filter the graph).
      if (Math.abs(ev.clientX - d.x) < 3) { renderTimeline(); return; }
      setRange([Math.min(d.from, d.to), Math.max(d.from, d.to)]);
    });
    tlCanvas.addEventListener('dblclick', () => { if (range !== null) setRange(null); });
    $('range-reset').addEventListener('click', () => setRange(null));
    $('lanes-more').addEventListener('click', () => {
      lanesShown = lanes.length < laneCandidates ? lanesShown + LANES_STEP : LANES_STEP;
      renderTimeline();
    });
    tlCanvas.addEventListener('mousemove', (ev) => {
      const r = tlCanvas.getBoundingClientRect();
      const x = ev.clientX - r.left, y = ev.clientY - r.top;
      if (x < LABEL_W || drag) { tooltip.hidden = true; return; }
      const b = bucketAt(x);
      const lines = [`${fmtTime(b * tl.width)} \u2013 ${fmtTime((b + 1) * tl.width)}`];
      const li = Math.floor((y - laneY(0)) / (LANE_H + LANE_GAP));
      if (li >= 0 && li < lanes.length) {
        const l = lanes[li], t = laneName(l);
        lines.push(`${threads.comm[t]} ${threads.pid[t]}/${threads.tid[t]}`);
        const d = laneDensity.get(l);
        lines.push(`${fmtInt(d ? d[b] : 0)} samples of ${events.name[+eventSel.value]}`);
        const ls = laneStates.get(l);
        if (ls && ls.runnable[b]) lines.push(`runnable ${fmtTime(ls.runnable[b])}`);
        if (ls && ls.sleeping[b]) lines.push(`sleeping ${fmtTime(ls.sleeping[b])}`);
      }
      tooltip.textContent = lines.join('\n');
      tooltip.hidden = false;
      tooltip.style.left = Math.max(4, Math.min(ev.clientX + 14, window.innerWidth - tooltip.offsetWidth - 8)) + 'px';
      tooltip.style.top = (ev.clientY + 16) + 'px';
    });
    tlCanvas.addEventListener('mouseleave', () => { tooltip.hidden = true; });
  }

  // ---- wiring -------------------------------------------------------------------------------
  function refresh() {
    computeWeights();
    if (zoom !== 0 && nodeTotal[zoom] === 0) zoom = 0;
    applySearch();
    render();
    renderTable();
    renderRelations();
    renderTimeline();
  }
  eventSel.addEventListener('change', () => { fillProcesses(); fillThreads(); refresh(); });
  processSel.addEventListener('change', () => { threadSel.value = 'all'; fillThreads(); refresh(); });
  threadSel.addEventListener('change', refresh);
  metricSel.addEventListener('change', refresh);
  let resizeTimer = 0;
  window.addEventListener('resize', () => { clearTimeout(resizeTimer); resizeTimer = setTimeout(() => { render(); renderTimeline(); }, 100); });

  fillProcesses();
  fillThreads();
  refresh();

  // For the browser tests and for scripting from the console: where a function is drawn and
  // what is zoomed, in canvas (CSS pixel) coordinates.
  window.tperfFlame = {
    nodes: nNodes,
    drawn: () => drawnNode.length,
    zoomName: () => nodeName(zoom),
    canvasWidth: () => cssWidth,
    total: () => grandTotal,  // of the current filter and measure
    // The timeline: its buckets, where they are drawn (canvas CSS pixels) and its lanes.
    timeline() {
      if (!tl) return null;
      return {
        start: tl.start, width: tl.width, buckets: tl.buckets, hasStates: tl.hasStates,
        left: bucketX(0), right: bucketX(tl.buckets), laneHeight: LANE_H,
        lanes: lanes.map((l, i) => {
          const t = laneName(l), ls = laneStates.get(l);
          return { tid: threads.tid[t], pid: threads.pid[t], label: threadLabel(t), y: laneY(i),
            sleepingNs: ls ? ls.sleepingNs : 0, runnableNs: ls ? ls.runnableNs : 0 };
        }),
        candidates: laneCandidates,
      };
    },
    bucketX: (b) => (tl ? bucketX(b) : 0),
    range: () => range,
    frameRect(name) {
      let best = -1;
      for (let i = 0; i < drawnNode.length; i++) {
        if (nodeName(drawnNode[i]) === name && (best < 0 || drawnW[i] > drawnW[best])) best = i;
      }
      return best < 0 ? null : { x: drawnX[best], y: drawnY[best], w: drawnW[best], h: ROW - 1 };
    },
  };
  document.body.dataset.ready = '1';
})();
