// A Canary's page: where the run is, what holds it, the run as charts (weight, then every
// metric's checks against its threshold), the checks as a table, gates, what changed,
// conditions, events and the last runs. The live page and a report draw it alike.

import { h, ago, clock, stamp, span, ms, phaseBadge, weightBar, imageTag, table, empty } from './util.js';
import { weightChart, metricChart, legend, rangeText } from './charts.js';

// canaryHead is the page's title block: name, phase, weight and the run's figures.
export function canaryHead(v, now) {
  const fig = (k, val, id) => h('div', null, h('div', { class: 'k' }, k), h('div', { class: 'v', id }, val));
  const weight = v.strategy === 'canary'
    ? h('span', null, weightBar(v.weight, v.maxWeight, true), ' ', h('span', { id: 'weight-text', 'data-weight': v.weight }, `${v.weight}%`),
      h('span', { class: 'muted' }, ` of ${v.maxWeight}%`))
    : h('span', { id: 'weight-text', 'data-weight': v.weight }, `${v.weight}% (${v.strategy})`);
  const revision = v.revision ? h('span', { class: 'mono', title: `primary runs ${v.promotedRevision || '-'}` }, v.revision,
    v.promotedRevision && v.promotedRevision !== v.revision ? h('span', { class: 'muted' }, ` (primary ${v.promotedRevision})`) : null) : '-';
  return h('div', null,
    h('div', { class: 'row' },
      h('h1', null, h('span', { class: 'muted' }, v.namespace + ' / '), v.name),
      phaseBadge(v.phase), v.paused ? h('span', { class: 'badge phase-Waiting' }, 'paused') : null),
    h('div', { class: 'grid' },
      fig('Weight', weight),
      fig('Failed checks', h('span', { id: 'failed-text' }, `${v.failedChecks} / ${v.threshold}`)),
      fig('Strategy', `${v.strategy}${v.steps ? ', ' + v.steps : ''}, every ${v.interval}`),
      fig('Next step', v.nextStep ? `${clock(v.nextStep)} (${ms(v.nextStep) > now ? 'in ' + span((ms(v.nextStep) - now) / 1000) : 'due'})` : '-'),
      fig('Target', v.target + (v.provider ? ` via ${v.provider}` : '')),
      fig('Revision', revision),
      fig('Last transition', v.lastTransition ? `${ago(v.lastTransition, now)} ago` : '-')),
    v.holds ? h('p', { class: 'notice warn', id: 'holds' }, h('strong', null, v.holds.reason + ': '), v.holds.message || '') : null,
    v.requests ? h('p', { class: 'notice warn' }, 'Requested, not handled yet: ', h('code', null, v.requests)) : null);
}

// canaryBody is everything below the title and levers. opts: now, events, eventsError (null:
// not shown, as in a report without events).
export function canaryBody(v, opts) {
  const now = opts.now;
  return [
    runSection(v, now),
    checksSection(v),
    gatesSection(v, now),
    changesSection(v),
    conditionsSection(v.conditions || [], now),
    eventsSection(opts.events, opts.eventsError, now),
    runsSection(v.runs || []),
  ];
}

function runSection(v, now) {
  const run = v.run;
  const sec = h('section', { class: 'panel', id: 'run' });
  if (!run) {
    sec.append(h('h2', null, 'The run'), empty('No run yet: the history starts with the next revision.'));
    return sec;
  }
  const ended = run.endTime
    ? h('span', null, ' · ', phaseBadge(run.outcome), ` after ${span((ms(run.endTime) - ms(run.startTime)) / 1000)}`)
    : h('span', null, ` · running for ${span((now - ms(run.startTime)) / 1000)}`);
  sec.append(h('div', { class: 'row spread' },
    h('h2', null, 'The run of ', h('span', { class: 'mono' }, run.revision), h('span', { class: 'muted small' }, ` · started ${stamp(run.startTime)}`), ended),
    legend()));
  if (run.droppedChecks) sec.append(h('p', { class: 'muted small' }, `${run.droppedChecks} earlier checks are no longer kept; the charts show the latest ${run.checks.length}.`));
  sec.append(h('h3', null, 'Canary weight'), weightChart(run, run.endTime ? 0 : v.weight, v.maxWeight, now));
  (run.metrics || []).forEach((m, i) => {
    const last = (v.analysis || []).find((a) => a.name === m.name);
    sec.append(h('div', { class: 'metric', 'data-metric': m.name },
      h('div', { class: 'row spread' },
        h('h3', null, m.name, h('span', { class: 'muted small' },
          ` · ${rangeText(m.thresholdRange) || (m.compareToPrimary ? 'compared to the primary, max delta ' + m.compareToPrimary.maxDelta : 'no threshold')}` +
          (m.interval ? ` · window ${m.interval}` : ''))),
        last && last.message && last.verdict !== 'Pass' ? h('span', { class: 'small v-text-' + last.verdict }, last.message) : null),
      metricChart(run, i, now),
      m.query ? h('details', null, h('summary', null, 'Query'), h('pre', { class: 'query mono' }, m.query)) : null));
  });
  if (!(run.metrics || []).length) sec.append(empty('No metric checked yet.'));
  return sec;
}

function checksSection(v) {
  const run = v.run;
  const sec = h('section', { class: 'panel', id: 'checks' }, h('h2', null, 'Checks'));
  if (!run || !(run.checks || []).length) {
    sec.append(empty('No check in this run yet.'));
    return sec;
  }
  const metrics = run.metrics || [];
  const rows = run.checks.map((c, i) => h('tr', { 'data-check': i },
    h('td', { class: 'num' }, String(i + 1 + (run.droppedChecks || 0))),
    h('td', { class: 'nowrap' }, clock(c.time)),
    h('td', { class: 'num' }, c.weight + '%'),
    h('td', { class: 'o-text-' + c.outcome }, c.outcome),
    metrics.map((m, mi) => {
      const r = (c.results || [])[mi] || {};
      return h('td', { class: 'num nowrap v-text-' + (r.verdict || 'None'), 'data-verdict': r.verdict || '' },
        r.verdict ? `${r.value || '–'} ${r.verdict}` : '');
    })));
  sec.append(table(['#', 'Time', { title: 'Weight', num: true }, 'Outcome', ...metrics.map((m) => ({ title: m.name, num: true }))], rows.reverse(),
    { id: 'checks-table' }));
  return sec;
}

function gatesSection(v, now) {
  const sec = h('section', { class: 'panel', id: 'gates' }, h('h2', null, 'Gates and webhooks'));
  const gates = v.gates || [];
  if (!gates.length) {
    sec.append(empty('No webhooks.'));
    return sec;
  }
  sec.append(table(['Name', 'Gate', 'Last answer', 'Message', 'When'], gates.map((g) => h('tr', null,
    h('td', null, g.name), h('td', null, g.type),
    h('td', { class: g.answered ? (g.passed ? 'v-text-Pass' : 'v-text-Fail') : 'muted' },
      g.manual ? 'manual (promote approves)' : g.answered ? (g.passed ? 'passed' : 'refused') : 'not asked in this revision'),
    h('td', null, g.message || ''), h('td', { class: 'nowrap' }, g.answeredAt ? ago(g.answeredAt, now) + ' ago' : '')))));
  return sec;
}

function changesSection(v) {
  const sec = h('section', { class: 'panel', id: 'changes' }, h('h2', null, 'What this revision changes'));
  const run = v.run;
  const byName = new Map();
  for (const img of (run && run.primaryImages) || []) byName.set(img.container, { container: img.container, from: img.image });
  for (const img of (run && run.images) || []) byName.set(img.container, { ...(byName.get(img.container) || { container: img.container }), to: img.image });
  if (byName.size) {
    sec.append(table(['Container', 'Primary', 'This revision'], [...byName.values()].map((c) => h('tr', null,
      h('td', null, c.container),
      h('td', { class: 'mono', title: c.from || '' }, c.from ? imageTag(c.from) : '–'),
      h('td', { class: 'mono' + (c.from !== c.to ? ' changed' : ''), title: c.to || '' }, c.to ? imageTag(c.to) : '–')))));
  } else {
    sec.append(empty('No images recorded (the run history starts with the next revision).'));
  }
  const configs = v.configs || [];
  if (configs.length) {
    sec.append(h('h3', null, 'Tracked ConfigMaps and Secrets (by checksum; contents are never shown)'),
      table(['Name', 'Checksum'], configs.map((c) => h('tr', null, h('td', null, c.name), h('td', { class: 'mono' }, c.checksum)))));
  }
  return sec;
}

// conditionsSection lists conditions (shared with the data plane page).
export function conditionsSection(conditions, now) {
  const sec = h('section', { class: 'panel', id: 'conditions' }, h('h2', null, 'Conditions'));
  if (!conditions.length) {
    sec.append(empty('No conditions yet.'));
    return sec;
  }
  sec.append(table(['Type', 'Status', 'Reason', 'Age', 'Message'], conditions.map((c) => h('tr', null,
    h('td', null, c.type), h('td', null, c.status), h('td', null, c.reason), h('td', { class: 'nowrap' }, ago(c.lastTransitionTime, now)),
    h('td', null, c.message || '')))));
  return sec;
}

// eventsSection lists events, newest first (shared with the data plane page); nothing when
// events is null and there is no error.
export function eventsSection(events, error, now) {
  if (!events && !error) return null;
  const sec = h('section', { class: 'panel', id: 'events' }, h('h2', null, 'Events'));
  if (error) sec.append(h('p', { class: 'notice error' }, error));
  if (events && !events.length) sec.append(empty('No events.'));
  if (events && events.length) {
    sec.append(table(['Last seen', 'Type', 'Reason', 'Message'], events.map((e) => h('tr', null,
      h('td', { class: 'nowrap', title: stamp(e.last) }, ago(e.last, now) + ' ago' + (e.count > 1 ? ` (×${e.count})` : '')),
      h('td', { class: e.type === 'Warning' ? 'v-text-Fail' : '' }, e.type), h('td', null, e.reason), h('td', null, e.message)))));
  }
  return sec;
}

function runsSection(runs) {
  const sec = h('section', { class: 'panel', id: 'runs' }, h('h2', null, 'Last runs'));
  if (!runs.length) {
    sec.append(empty('No finished run yet.'));
    return sec;
  }
  sec.append(table(['Outcome', 'Revision', 'Started', { title: 'Duration', num: true }, { title: 'Checks', num: true },
    { title: 'Failed', num: true }, { title: 'Max weight', num: true }, 'Images', 'Reason'], runs.map((r) => h('tr', null,
    h('td', null, phaseBadge(r.outcome)), h('td', { class: 'mono' }, r.revision), h('td', { class: 'nowrap' }, stamp(r.startTime)),
    h('td', { class: 'num' }, span((ms(r.endTime) - ms(r.startTime)) / 1000)), h('td', { class: 'num' }, String(r.checks || 0)),
    h('td', { class: 'num' }, String(r.failedChecks || 0)), h('td', { class: 'num' }, (r.maxWeight || 0) + '%'),
    h('td', { class: 'mono small' }, (r.images || []).map((i) => imageTag(i.image)).join(', ')),
    h('td', { class: 'small' }, r.reason || '')))));
  return sec;
}
