// A DataPlane's page: the declared version against the control plane, the waves on a timeline,
// each namespace's proxies, the pods left behind, conditions and events.

import { h, ago, phaseBadge, table, empty } from './util.js';
import { wavesChart } from './charts.js';
import { conditionsSection, eventsSection } from './canary.js';

// dataPlaneHead is the page's title block.
export function dataPlaneHead(v, now) {
  const fig = (k, val, id) => h('div', null, h('div', { class: 'k' }, k), h('div', { class: 'v', id }, val));
  return h('div', null,
    h('div', { class: 'row' }, h('h1', null, h('span', { class: 'muted' }, 'dataplane / '), v.name), phaseBadge(v.phase),
      v.paused ? h('span', { class: 'badge phase-Waiting' }, 'paused') : null),
    h('div', { class: 'grid' },
      fig('Mesh', v.mesh),
      fig('Declared version', h('span', { class: 'mono' }, v.version || '-'),
        'declared'),
      fig('Control plane', h('span', null, h('span', { class: 'mono' }, v.controlPlaneVersion || '-'), ' ',
        v.controlPlaneReady ? h('span', { class: 'v-text-Pass' }, 'ready') : h('span', { class: 'v-text-Fail' }, 'not ready'))),
      fig('Proxies current / desired', h('span', { id: 'proxies' }, `${v.current} / ${v.desired}`)),
      fig('Wave', v.waveCount ? `${v.wave} of ${v.waveCount - 1}` : '-'),
      fig('Converged on', h('span', { class: 'mono' }, v.convergedVersion || '-')),
      fig('Last update', v.lastUpdateAttempt ? `${v.lastUpdateResult || ''} ${ago(v.lastUpdateAttempt, now)} ago` : '-')),
    !v.controlPlaneReady && v.controlPlaneMessage ? h('p', { class: 'notice warn' }, 'Control plane: ' + v.controlPlaneMessage) : null,
    v.lastUpdateMessage ? h('p', { class: 'notice ' + (v.lastUpdateResult === 'Succeeded' ? 'ok' : 'warn') }, v.lastUpdateMessage) : null,
    v.requests ? h('p', { class: 'notice warn' }, 'Requested, not handled yet: ', h('code', null, v.requests)) : null);
}

// dataPlaneBody is everything below the title and levers.
export function dataPlaneBody(v, opts) {
  const now = opts.now;
  const waves = v.waves || [];
  const left = [['Unmanaged (Sluice cannot restart them)', v.unmanagedPods], ['Without the proxy', v.unmeshedPods], ['Drifted', v.driftedPods]]
    .filter(([, pods]) => pods && pods.length);
  return [
    h('section', { class: 'panel', id: 'waves' }, h('h2', null, 'Waves'), waves.length ? wavesChart(waves, now) : empty('No waves planned.')),
    h('section', { class: 'panel', id: 'namespaces' }, h('h2', null, 'Namespaces'),
      (v.namespaces || []).length || (v.skipped || []).length
        ? table(['Namespace', { title: 'Wave', num: true }, { title: 'Desired', num: true }, { title: 'Current', num: true }, 'Status', 'Reason'], [
          ...(v.namespaces || []).map((n) => h('tr', null, h('td', null, n.namespace), h('td', { class: 'num' }, String(n.wave)),
            h('td', { class: 'num' }, String(n.desired)), h('td', { class: 'num' }, String(n.current)), h('td', null, phaseBadge(n.status)),
            h('td', null, (n.reason || '') + (n.revisionTag ? ` (tag ${n.revisionTag})` : '')))),
          ...(v.skipped || []).map((sk) => h('tr', null, h('td', null, sk.namespace), h('td', { class: 'num' }, '–'), h('td', { class: 'num' }, '–'),
            h('td', { class: 'num' }, '–'), h('td', null, h('span', { class: 'badge muted' }, 'Skipped')), h('td', null, `${sk.reason}${sk.message ? ': ' + sk.message : ''}`))),
        ]) : empty('No namespaces yet.')),
    h('section', { class: 'panel', id: 'left-behind' }, h('h2', null, 'Pods left behind'),
      left.length ? left.map(([title, pods]) => h('div', null, h('h3', null, `${title}: ${pods.length}`),
        h('p', { class: 'mono small' }, pods.join(', ')))) : empty('None.')),
    (v.analysis || []).length ? h('section', { class: 'panel', id: 'analysis' }, h('h2', null, 'Analysis'),
      table(['Namespace', 'Metric', 'Verdict', { title: 'Value', num: true }, 'Threshold', 'Message'], v.analysis.map((a) => h('tr', null,
        h('td', null, a.namespace), h('td', null, a.name), h('td', { class: 'v-text-' + a.verdict }, a.verdict), h('td', { class: 'num' }, a.value || '–'),
        h('td', null, a.thresholdRange || ''), h('td', null, a.message || ''))))) : null,
    conditionsSection(v.conditions || [], now),
    eventsSection(opts.events, opts.eventsError, now),
  ];
}
