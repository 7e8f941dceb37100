// DOM building and formatting shared by the pages. Every module's top-level names are unique:
// a report inlines the modules into one script (see assets.go).

// h builds an element: attrs sets properties and attributes ("text" for textContent, "on*" for
// listeners, "style" as an object through CSSOM, booleans as present/absent attributes);
// children are nodes, strings or arrays of them (null and false are skipped).
export function h(tag, attrs, ...children) {
  return build(document.createElement(tag), attrs, children);
}

const SVGNS = 'http://www.w3.org/2000/svg';

// svgEl builds an SVG element, as h does.
export function svgEl(tag, attrs, ...children) {
  return build(document.createElementNS(SVGNS, tag), attrs, children);
}

function build(el, attrs, children) {
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k === 'text') el.textContent = v;
    else if (k === 'style') Object.assign(el.style, v);
    else if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else if (v === true) el.setAttribute(k, '');
    else el.setAttribute(k, String(v));
  }
  appendAll(el, children);
  return el;
}

function appendAll(el, children) {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    if (Array.isArray(c)) appendAll(el, c);
    else el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
}

// ms parses an RFC 3339 time to milliseconds since the epoch; NaN for none.
export function ms(t) {
  return t ? Date.parse(t) : NaN;
}

// ago renders how long ago t was, as kubectl's AGE column: 45s, 12m, 3h, 5d.
export function ago(t, now) {
  const d = (now - ms(t)) / 1000;
  if (!Number.isFinite(d)) return '-';
  return span(Math.max(0, d));
}

// span renders a number of seconds briefly: 45s, 2m30s, 12m, 3h10m, 5d.
export function span(sec) {
  sec = Math.round(sec);
  if (sec < 60) return sec + 's';
  if (sec < 600) return Math.floor(sec / 60) + 'm' + (sec % 60 ? (sec % 60) + 's' : '');
  if (sec < 3600) return Math.floor(sec / 60) + 'm';
  if (sec < 36000) return Math.floor(sec / 3600) + 'h' + (Math.floor(sec / 60) % 60 ? (Math.floor(sec / 60) % 60) + 'm' : '');
  if (sec < 172800) return Math.floor(sec / 3600) + 'h';
  return Math.floor(sec / 86400) + 'd';
}

// clock renders t as the local time of day, HH:MM:SS.
export function clock(t) {
  const d = new Date(typeof t === 'number' ? t : ms(t));
  return Number.isNaN(d.getTime()) ? '-' : d.toLocaleTimeString([], { hour12: false });
}

// stamp renders t as a local date and time.
export function stamp(t) {
  const d = new Date(ms(t));
  return Number.isNaN(d.getTime()) ? '-' : d.toLocaleString([], { hour12: false });
}

// goDuration parses a Go duration such as 1m30s or 500ms to milliseconds; NaN if it is not one.
export function goDuration(text) {
  const re = /([0-9]+(?:\.[0-9]+)?)(ms|h|m|s)/gy;
  const unit = { h: 3600e3, m: 60e3, s: 1e3, ms: 1 };
  let total = 0;
  let m;
  let seen = 0;
  while ((m = re.exec(text || '')) !== null) {
    total += parseFloat(m[1]) * unit[m[2]];
    seen += m[0].length;
  }
  return seen > 0 && seen === (text || '').length ? total : NaN;
}

// phaseBadge is a badge coloured by phase (or run outcome).
export function phaseBadge(phase, extra) {
  return h('span', { class: 'badge phase-' + String(phase).replace(/[^A-Za-z]/g, ''), 'data-phase': phase }, phase, extra || null);
}

// weightBar draws weight against max (0–100), with a tick at max.
export function weightBar(weight, max, big) {
  const bar = h('span', { class: 'bar' + (big ? ' big' : ''), role: 'img', 'aria-label': `weight ${weight}% of ${max}%` });
  bar.append(h('span', { style: { width: Math.max(0, Math.min(100, weight)) + '%' } }));
  if (max > 0 && max < 100) bar.append(h('i', { style: { left: max + '%' } }));
  return bar;
}

// imageTag shortens an image reference to its last path element: podinfo:6.7.1.
export function imageTag(ref) {
  const noDigest = ref.split('@')[0];
  const last = noDigest.split('/').pop();
  return ref.includes('@') && !last.includes(':') ? last + '@' + ref.split('@')[1].slice(0, 19) : last;
}

// table builds a table with a header row and body rows; a column is {title, num} or a string.
export function table(columns, rows, attrs) {
  const head = h('tr', null, columns.map((c) => h('th', { class: c.num ? 'num' : null, scope: 'col' }, typeof c === 'string' ? c : c.title)));
  return h('div', { class: 'table-wrap' }, h('table', attrs || null, h('thead', null, head), h('tbody', null, rows)));
}

// empty is the placeholder of a section without content.
export function empty(text) {
  return h('p', { class: 'empty' }, text);
}

// setTheme applies and remembers a theme ("auto", "light" or "dark") and names it on button.
export function setTheme(theme, button) {
  if (theme === 'auto') delete document.documentElement.dataset.theme;
  else document.documentElement.dataset.theme = theme;
  try { localStorage.setItem('sluice-theme', theme); } catch { /* storage refused (file://) */ }
  if (button) button.textContent = 'Theme: ' + theme;
}

// initTheme restores the remembered theme and makes button cycle auto → light → dark.
export function initTheme(button) {
  let theme = 'auto';
  try { theme = localStorage.getItem('sluice-theme') || 'auto'; } catch { /* storage refused */ }
  setTheme(theme, button);
  if (!button) return;
  button.addEventListener('click', () => {
    const order = ['auto', 'light', 'dark'];
    theme = order[(order.indexOf(theme) + 1) % order.length];
    setTheme(theme, button);
  });
}
