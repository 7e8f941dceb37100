// The live dashboard: routes (#/, #/canary/NS/NAME, #/dataplane/NAME), one Server-Sent Events
// stream per open page, fed by the server's informers; no polling.

import { h, initTheme } from './util.js';
import { Overview } from './overview.js';
import { canaryHead, canaryBody } from './canary.js';
import { dataPlaneHead, dataPlaneBody } from './dataplane.js';
import { LeverBar } from './levers.js';

const main = document.getElementById('main');
const connection = document.getElementById('connection');
const token = document.querySelector('meta[name="sluice-token"]').content;
const readOnly = document.querySelector('meta[name="sluice-read-only"]').content === 'true';
const now = () => Date.now();

let stream = null;
let timers = [];

function stopPage() {
  if (stream) stream.close();
  stream = null;
  timers.forEach(clearInterval);
  timers = [];
}

// open starts the stream of a page; handlers map event names to functions of the parsed data.
function open(query, handlers) {
  stream = new EventSource('/api/stream?' + query);
  stream.onopen = () => { connection.textContent = 'live'; connection.className = 'connection'; };
  stream.onerror = () => { connection.textContent = 'connection lost, retrying…'; connection.className = 'connection lost'; };
  for (const [name, fn] of Object.entries(handlers)) {
    stream.addEventListener(name, (e) => fn(JSON.parse(e.data)));
  }
}

function overviewPage() {
  document.title = 'Sluice';
  const page = new Overview(main, now);
  open('view=overview', {
    overview: (o) => {
      if (!performance.getEntriesByName('sluice-overview-received').length) performance.mark('sluice-overview-received');
      page.load(o);
      main.dataset.ready = 'true';
      // Marks for the scale benchmark: the first table in the DOM, then on screen.
      if (!performance.getEntriesByName('sluice-overview-dom').length) {
        performance.mark('sluice-overview-dom');
        requestAnimationFrame(() => setTimeout(() => performance.mark('sluice-overview-painted'), 0));
      }
    },
    canary: (m) => page.upsertCanary(m.key, m.row),
    dataplane: (m) => page.upsertDataPlane(m.key, m.row),
    errors: (e) => page.setErrors(e),
  });
  // Ages move on: redraw the rows now and then.
  timers.push(setInterval(() => page.redraw(), 15000));
}

// detailPage draws a Canary's or DataPlane's page: the head and body are redrawn on every change,
// the levers and their dialog stay.
function detailPage(kind, target) {
  const label = kind === 'canary' ? `${target.namespace}/${target.name}` : target.name;
  document.title = `${label} · Sluice`;
  const head = h('div', { id: 'head' });
  const body = h('div', { id: 'body' });
  const notice = h('div', { id: 'notice' });
  const levers = readOnly ? null : new LeverBar(kind, target, token);
  main.replaceChildren(h('p', null, h('a', { href: '#/' }, '← Overview')), notice,
    h('section', { class: 'panel' }, head, levers ? levers.el : null), body);
  let view = null;
  let events = null;
  let eventsError = null;
  let errors = {};
  const draw = () => {
    const kindError = errors[kind];
    notice.replaceChildren(kindError ? h('p', { class: 'notice error' }, kindError) : '');
    if (!view) {
      head.replaceChildren(h('h1', null, label));
      body.replaceChildren(h('p', { class: 'empty' }, kindError ? '' : `${kind} ${label} not found.`));
      if (levers) levers.update([]);
      return;
    }
    const opts = { now: now(), events, eventsError };
    head.replaceChildren(kind === 'canary' ? canaryHead(view, opts.now) : dataPlaneHead(view, opts.now));
    body.replaceChildren(...(kind === 'canary' ? canaryBody(view, opts) : dataPlaneBody(view, opts)).filter(Boolean));
    if (levers) levers.update(view.levers);
  };
  // Events are read once when the page opens, and again after a change (at most every 2 s).
  const path = kind === 'canary'
    ? `/api/canaries/${encodeURIComponent(target.namespace)}/${encodeURIComponent(target.name)}`
    : `/api/dataplanes/${encodeURIComponent(target.name)}`;
  let eventsDue = false;
  let eventsBusy = false;
  const readEvents = async () => {
    if (eventsBusy) { eventsDue = true; return; }
    eventsBusy = true;
    try {
      const res = await fetch(path);
      const body = await res.json();
      if (res.ok) { events = body.events || []; eventsError = body.eventsError || null; }
      draw();
    } catch { /* the stream reports the connection */ }
    setTimeout(() => { eventsBusy = false; if (eventsDue) { eventsDue = false; readEvents(); } }, 2000);
  };
  open(`${kind}=${encodeURIComponent(kind === 'canary' ? label : target.name)}`, {
    [kind]: (v) => { view = v; draw(); main.dataset.ready = 'true'; readEvents(); },
    errors: (e) => { errors = e; draw(); },
  });
  timers.push(setInterval(draw, 5000)); // ages, the "now" line
}

function route() {
  stopPage();
  main.dataset.ready = 'false';
  const parts = location.hash.replace(/^#\/?/, '').split('/').map(decodeURIComponent);
  if (parts[0] === 'canary' && parts.length === 3) detailPage('canary', { namespace: parts[1], name: parts[2] });
  else if (parts[0] === 'dataplane' && parts.length === 2) detailPage('dataplane', { name: parts[1] });
  else overviewPage();
  main.focus({ preventScroll: true });
}

initTheme(document.getElementById('theme'));
window.addEventListener('hashchange', route);
route();
