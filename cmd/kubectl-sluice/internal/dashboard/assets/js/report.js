// A report: one Canary's page as it was when `kubectl sluice report` wrote it, from the data
// inlined in the file. It loads nothing: it works offline and attached to a ticket.

import { h, initTheme, stamp, ms } from './util.js';
import { canaryHead, canaryBody } from './canary.js';

function showReport() {
  const view = JSON.parse(document.getElementById('report-data').textContent);
  const at = view.generated ? ms(view.generated) : Date.now();
  const opts = { now: at, events: view.events || [], eventsError: view.eventsError || null };
  document.getElementById('main').replaceChildren(
    h('p', { class: 'muted small' }, `Written ${stamp(view.generated)} by kubectl sluice report.`),
    h('section', { class: 'panel' }, canaryHead(view, at)),
    ...canaryBody(view, opts).filter(Boolean));
  document.getElementById('main').dataset.ready = 'true';
}

initTheme(document.getElementById('theme'));
showReport();
