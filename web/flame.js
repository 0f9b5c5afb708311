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
    for (let i = 0; i < nCounts; i++) {
      if (counts.event[i] !== ev) continue;
      const t = counts.thread[i];
      if (pid !== null && threads.pid[t] !== pid) continue;
      if (tid !== null && threads.tid[t] !== tid) continue;
      const s = counts.stack[i];
      // A sample without any frame counts in the total, on the root itself.
      const n = s >= 0 ? stackNode[s] : 0;
      nodeSelf[n] += bySamples ? counts.samples[i] : counts.weight[i];
      nodeSamples[n] += counts.samples[i];
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

  // ---- wiring -------------------------------------------------------------------------------
  function refresh() {
    computeWeights();
    if (zoom !== 0 && nodeTotal[zoom] === 0) zoom = 0;
    applySearch();
    render();
    renderTable();
    renderRelations();
  }
  eventSel.addEventListener('change', () => { fillProcesses(); fillThreads(); refresh(); });
  processSel.addEventListener('change', () => { threadSel.value = 'all'; fillThreads(); refresh(); });
  threadSel.addEventListener('change', refresh);
  metricSel.addEventListener('change', refresh);
  let resizeTimer = 0;
  window.addEventListener('resize', () => { clearTimeout(resizeTimer); resizeTimer = setTimeout(render, 100); });

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
