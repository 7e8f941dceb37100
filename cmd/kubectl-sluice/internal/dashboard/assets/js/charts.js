// Charts drawn as plain SVG: the canary weight over a run, each metric's value per check against
// its threshold band, and a data plane's waves. Colours come from the style sheet (classes
// v-<verdict>, o-<outcome>, wave-<phase>); each verdict also has its own marker shape.

import { svgEl, h, clock, ms, goDuration } from './util.js';

const CHART_W = 1000;
const PAD = { left: 56, right: 18, top: 12, bottom: 26 };

// timeScale maps [t0, t1] (ms) onto the plot's width.
function timeScale(t0, t1) {
  if (!(t1 > t0)) t1 = t0 + 1000;
  const w = CHART_W - PAD.left - PAD.right;
  const f = (t) => PAD.left + ((t - t0) / (t1 - t0)) * w;
  f.t0 = t0;
  f.t1 = t1;
  return f;
}

// valueScale maps [lo, hi] onto the plot's height (hi at the top).
function valueScale(lo, hi, height) {
  if (!(hi > lo)) { hi = lo + 1; }
  const top = PAD.top;
  const bottom = height - PAD.bottom;
  const f = (v) => bottom - ((v - lo) / (hi - lo)) * (bottom - top);
  f.lo = lo;
  f.hi = hi;
  f.top = top;
  f.bottom = bottom;
  return f;
}

const TIME_STEPS = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 21600, 43200, 86400].map((x) => x * 1000);

function timeTicks(x) {
  const span = x.t1 - x.t0;
  const step = TIME_STEPS.find((st) => span / st <= 7) || 86400000;
  const out = [];
  for (let t = Math.ceil(x.t0 / step) * step; t <= x.t1; t += step) out.push(t);
  return out;
}

// niceStep is a round step that cuts span into about n parts.
function niceStep(span, n) {
  const raw = span / n;
  const mag = Math.pow(10, Math.floor(Math.log10(raw)));
  const norm = raw / mag;
  return (norm <= 1 ? 1 : norm <= 2 ? 2 : norm <= 5 ? 5 : 10) * mag;
}

function valueTicks(y) {
  const step = niceStep(y.hi - y.lo, 4);
  const out = [];
  for (let v = Math.ceil(y.lo / step) * step; v <= y.hi + step * 1e-9; v += step) out.push(Number(v.toPrecision(12)));
  return out;
}

function formatValue(v) {
  if (Math.abs(v) >= 1e6 || (Math.abs(v) < 1e-3 && v !== 0)) return v.toExponential(1);
  return String(Number(v.toPrecision(6)));
}

// frame draws the axes, grid and labels of a chart of the given height.
function frame(x, y, height, unit) {
  const g = svgEl('g', { class: 'frame' });
  for (const v of valueTicks(y)) {
    g.append(svgEl('line', { class: 'grid-line', x1: PAD.left, x2: CHART_W - PAD.right, y1: y(v), y2: y(v) }));
    g.append(svgEl('text', { x: PAD.left - 6, y: y(v) + 3.5, 'text-anchor': 'end', text: formatValue(v) + (unit || '') }));
  }
  g.append(svgEl('line', { class: 'axis', x1: PAD.left, x2: CHART_W - PAD.right, y1: y.bottom, y2: y.bottom }));
  for (const t of timeTicks(x)) {
    g.append(svgEl('line', { class: 'axis', x1: x(t), x2: x(t), y1: y.bottom, y2: y.bottom + 4 }));
    g.append(svgEl('text', { x: x(t), y: height - 8, 'text-anchor': 'middle', text: clock(t) }));
  }
  return g;
}

// runSpan is the time span a run's charts cover: its start to its end, or to now while it runs.
export function runSpan(run, now) {
  const t0 = ms(run.startTime);
  let t1 = run.endTime ? ms(run.endTime) : now;
  for (const c of run.checks || []) t1 = Math.max(t1, ms(c.time));
  // A run in flight gets room on the right: the current step is visible, not a sliver at "now".
  return timeScale(t0, t1 + (t1 - t0) * (run.endTime ? 0.02 : 0.08));
}

// weightChart draws the canary weight over the run as steps: each check's judged weight from the
// previous check on, then the current weight (or 0 once the run ended); a dot per check coloured
// by its outcome.
export function weightChart(run, current, maxWeight, now) {
  const height = 150;
  const x = runSpan(run, now);
  const checks = run.checks || [];
  const top = Math.max(maxWeight || 0, current || 0, ...checks.map((c) => c.weight), 10);
  const y = valueScale(0, Math.min(100, Math.ceil(top / 10) * 10), height);
  const svg = svgEl('svg', { class: 'chart weight-chart', viewBox: `0 0 ${CHART_W} ${height}`, role: 'img',
    'aria-label': `Canary weight over the run: ${checks.map((c) => c.weight + '%').join(', ') || 'no check yet'}` });
  svg.append(frame(x, y, height, '%'));
  let d = `M ${x(x.t0)} ${y(checks.length ? checks[0].weight : (current || 0))}`;
  let last = checks.length ? checks[0].weight : (current || 0);
  for (const c of checks) {
    d += ` V ${y(c.weight)} H ${x(ms(c.time))}`;
    last = c.weight;
  }
  const end = run.endTime ? ms(run.endTime) : now;
  if (run.endTime) {
    d += ` H ${x(end)} V ${y(0)}`;
  } else {
    d += ` V ${y(current || 0)} H ${x(Math.min(end, x.t1))}`;
    last = current;
  }
  svg.append(svgEl('path', { class: 'weight-area', d: d + ` V ${y(0)} H ${x(x.t0)} Z` }));
  svg.append(svgEl('path', { class: 'weight', d, 'data-last-weight': last }));
  if (!run.endTime) svg.append(svgEl('line', { class: 'now', x1: x(now), x2: x(now), y1: y.top, y2: y.bottom }));
  checks.forEach((c, i) => {
    svg.append(svgEl('circle', { class: 'check o-' + c.outcome, cx: x(ms(c.time)), cy: y(c.weight), r: 4, 'data-check': i, 'data-outcome': c.outcome },
      svgEl('title', { text: `Check ${i + 1 + (run.droppedChecks || 0)} at ${clock(c.time)}: weight ${c.weight}%, ${c.outcome}` })));
  });
  return svg;
}

// marker draws a check's point in its verdict's shape: a disc (pass), a square (fail), a
// triangle (error), a ring (no data, skipped).
function marker(verdict, cx, cy, attrs) {
  const cls = 'pt v-' + (verdict || 'None');
  switch (verdict) {
    case 'Fail':
      return svgEl('rect', { ...attrs, class: cls, x: cx - 4.5, y: cy - 4.5, width: 9, height: 9 });
    case 'Error':
      return svgEl('path', { ...attrs, class: cls, d: `M ${cx} ${cy - 5.5} L ${cx + 5.5} ${cy + 4.5} L ${cx - 5.5} ${cy + 4.5} Z` });
    case 'NoData':
    case 'Skipped':
      return svgEl('circle', { ...attrs, class: cls, cx, cy, r: 4 });
    default:
      return svgEl('circle', { ...attrs, class: cls, cx, cy, r: 4.5 });
  }
}

// rangeText describes a threshold range: "min 99", "max 500", "min 1, max 2".
export function rangeText(tr) {
  if (!tr) return '';
  const parts = [];
  if (tr.min !== undefined && tr.min !== null) parts.push('min ' + formatValue(tr.min));
  if (tr.max !== undefined && tr.max !== null) parts.push('max ' + formatValue(tr.max));
  return parts.join(', ');
}

// metricChart draws metric i of the run: one point per check at its value, in its verdict's
// colour and shape (no value: on the bottom edge), the query window it judged as a bar behind
// it, and the threshold range as a band with dashed bounds.
export function metricChart(run, i, now) {
  const height = 160;
  const metric = run.metrics[i];
  const x = runSpan(run, now);
  const start = ms(run.startTime);
  const windowMs = goDuration(metric.interval);
  const tr = metric.thresholdRange || {};
  const has = (v) => v !== undefined && v !== null && Number.isFinite(v);
  const points = [];
  (run.checks || []).forEach((c, ci) => {
    const r = (c.results || [])[i];
    if (!r || !r.verdict) return;
    const v = r.value === undefined || r.value === '' ? NaN : parseFloat(r.value);
    const pv = r.primaryValue === undefined || r.primaryValue === '' ? NaN : parseFloat(r.primaryValue);
    const t = ms(c.time);
    const from = Number.isFinite(windowMs) ? Math.max(t - windowMs, start) : ms(c.windowStart || c.time);
    points.push({ ci, t, from, v, pv, verdict: r.verdict, check: c });
  });
  const values = points.flatMap((p) => [p.v, p.pv]).filter(Number.isFinite);
  if (has(tr.min)) values.push(tr.min);
  if (has(tr.max)) values.push(tr.max);
  let lo = values.length ? Math.min(...values) : 0;
  let hi = values.length ? Math.max(...values) : 1;
  const pad = hi > lo ? (hi - lo) * 0.15 : Math.max(Math.abs(hi) * 0.1, 1);
  lo -= pad;
  hi += pad;
  const y = valueScale(lo, hi, height);
  const svg = svgEl('svg', { class: 'chart metric-chart', viewBox: `0 0 ${CHART_W} ${height}`, role: 'img', 'data-metric': metric.name,
    'aria-label': `${metric.name}: ${points.map((p) => (Number.isFinite(p.v) ? formatValue(p.v) : 'no value') + ' ' + p.verdict).join(', ') || 'no check yet'}` });
  // The passing band first, under everything.
  const bandTop = has(tr.max) ? y(tr.max) : y.top;
  const bandBottom = has(tr.min) ? y(tr.min) : y.bottom;
  if (has(tr.min) || has(tr.max)) {
    svg.append(svgEl('rect', { class: 'band', x: PAD.left, width: CHART_W - PAD.left - PAD.right, y: bandTop, height: Math.max(0, bandBottom - bandTop) }));
  }
  svg.append(frame(x, y, height, ''));
  for (const [v, label] of [[tr.min, 'min'], [tr.max, 'max']]) {
    if (!has(v)) continue;
    svg.append(svgEl('line', { class: 'threshold', x1: PAD.left, x2: CHART_W - PAD.right, y1: y(v), y2: y(v) }));
    svg.append(svgEl('text', { x: CHART_W - PAD.right - 2, y: y(v) - 4, 'text-anchor': 'end', text: `${label} ${formatValue(v)}` }));
  }
  if (!run.endTime) svg.append(svgEl('line', { class: 'now', x1: x(now), x2: x(now), y1: y.top, y2: y.bottom }));
  for (const p of points) {
    const cy = Number.isFinite(p.v) ? y(p.v) : y.bottom - 6;
    const n = p.ci + 1 + (run.droppedChecks || 0);
    const text = `Check ${n} at ${clock(p.t)} (weight ${p.check.weight}%): ` +
      (Number.isFinite(p.v) ? formatValue(p.v) : 'no value') + ` ${p.verdict}` +
      (Number.isFinite(p.pv) ? `, primary ${formatValue(p.pv)}` : '') + `; window ${clock(p.from)} to ${clock(p.t)}`;
    const g = svgEl('g', { class: 'point', 'data-check': p.ci, 'data-verdict': p.verdict, 'data-value': Number.isFinite(p.v) ? p.v : '' },
      svgEl('title', { text }));
    if (Number.isFinite(p.v)) g.append(svgEl('line', { class: 'window', x1: x(p.from), x2: x(p.t), y1: cy, y2: cy }));
    if (Number.isFinite(p.pv)) g.append(svgEl('circle', { class: 'primary', cx: x(p.t), cy: y(p.pv), r: 2.5 }));
    g.append(marker(p.verdict, x(p.t), cy));
    svg.append(g);
  }
  return svg;
}

// legend explains the verdict colours and shapes.
export function legend() {
  const item = (verdict, label) => h('span', null,
    svgEl('svg', { width: 14, height: 14, viewBox: '0 0 14 14', class: 'chart legend-mark', 'aria-hidden': 'true' }, marker(verdict, 7, 7)), label);
  return h('div', { class: 'legend' }, item('Pass', 'pass'), item('Fail', 'fail'), item('NoData', 'no data'), item('Error', 'error'),
    item('Skipped', 'skipped'), h('span', null, '▬ the query window each check judged; shaded: the threshold range'));
}

// wavesChart draws a data plane's waves on a timeline: one bar per wave from its start to its end
// (or now), coloured by its phase.
export function wavesChart(waves, now) {
  const rowH = 26;
  const height = PAD.top + PAD.bottom + rowH * Math.max(1, waves.length);
  const starts = waves.map((w) => ms(w.startedAt)).filter(Number.isFinite);
  const ends = waves.map((w) => ms(w.completedAt)).filter(Number.isFinite);
  const t0 = starts.length ? Math.min(...starts) : now - 60000;
  const t1 = Math.max(now, ...ends, t0 + 60000);
  const x = timeScale(t0, t1);
  const svg = svgEl('svg', { class: 'chart waves-chart', viewBox: `0 0 ${CHART_W} ${height}`, role: 'img', 'aria-label': 'Waves over time' });
  svg.append(frameTimeOnly(x, height));
  waves.forEach((w, i) => {
    const top = PAD.top + i * rowH + 4;
    svg.append(svgEl('text', { x: PAD.left - 6, y: top + 13, 'text-anchor': 'end', text: 'wave ' + i }));
    const from = ms(w.startedAt);
    if (!Number.isFinite(from)) {
      svg.append(svgEl('text', { x: PAD.left + 4, y: top + 13, text: `${w.phase} · ${w.namespaces.length} namespaces · not started` }));
      return;
    }
    const to = Number.isFinite(ms(w.completedAt)) ? ms(w.completedAt) : now;
    svg.append(svgEl('rect', { class: 'wave wave-' + w.phase, x: x(from), y: top, width: Math.max(3, x(to) - x(from)), height: rowH - 8, rx: 3,
      'data-wave': i, 'data-phase': w.phase }, svgEl('title', { text: `wave ${i}: ${w.phase}, ${w.current}/${w.desired} proxies, ${w.namespaces.join(', ')}` })));
    svg.append(svgEl('text', { x: Math.min(x(to) + 6, CHART_W - 200), y: top + 13, text: `${w.phase} · ${w.current}/${w.desired} · ${w.namespaces.length} ns` }));
  });
  return svg;
}

function frameTimeOnly(x, height) {
  const g = svgEl('g', { class: 'frame' });
  const bottom = height - PAD.bottom;
  g.append(svgEl('line', { class: 'axis', x1: PAD.left, x2: CHART_W - PAD.right, y1: bottom, y2: bottom }));
  for (const t of timeTicks(x)) {
    g.append(svgEl('line', { class: 'grid-line', x1: x(t), x2: x(t), y1: PAD.top, y2: bottom }));
    g.append(svgEl('text', { x: x(t), y: height - 8, 'text-anchor': 'middle', text: clock(t) }));
  }
  return g;
}
