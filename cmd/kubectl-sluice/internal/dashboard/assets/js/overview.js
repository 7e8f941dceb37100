// The overview: one table of Canaries and one of DataPlanes, with a text filter, namespace and
// phase filters, sorting and counts per phase. Rows change in place as the stream reports them.

import { h, ago, phaseBadge, weightBar, imageTag, empty } from './util.js';

const CANARY_COLUMNS = [
  { key: 'namespace', title: 'Namespace' },
  { key: 'name', title: 'Name' },
  { key: 'phase', title: 'Phase' },
  { key: 'weight', title: 'Weight', num: true },
  { key: 'failedChecks', title: 'Failed', num: true },
  { key: 'revision', title: 'Revision (image)' },
  { key: 'holds', title: 'Held by' },
  { key: 'lastTransition', title: 'Last transition', num: true },
  { key: 'created', title: 'Age', num: true },
];

function sortValue(row, key) {
  switch (key) {
    case 'holds': return row.holds ? row.holds.reason : '';
    case 'lastTransition': return row.lastTransition ? -Date.parse(row.lastTransition) : -Infinity;
    case 'created': return -Date.parse(row.created);
    default: return row[key] === undefined ? '' : row[key];
  }
}

export class Overview {
  constructor(root, now) {
    this.now = now;
    this.rows = new Map(); // key -> row
    this.trs = new Map(); // key -> tr
    this.planes = new Map();
    this.errors = {};
    this.filter = { text: '', namespace: '', phase: '' };
    this.sort = { key: 'namespace', dir: 1 };
    this.scheduled = false;
    this.full = true; // the next flush redraws the whole table
    this.dirty = new Set(); // keys changed since the last flush
    this.build(root);
  }

  build(root) {
    this.text = h('input', { type: 'search', id: 'filter', placeholder: 'Filter by name, namespace, image, revision…', 'aria-label': 'Filter canaries',
      oninput: () => { this.filter.text = this.text.value.trim().toLowerCase(); this.full = true; this.schedule(); } });
    this.nsSelect = h('select', { id: 'namespace-filter', 'aria-label': 'Namespace',
      onchange: () => { this.filter.namespace = this.nsSelect.value; this.full = true; this.schedule(); } });
    this.chips = h('div', { class: 'chips', id: 'phase-counts', role: 'group', 'aria-label': 'Filter by phase' });
    this.count = h('span', { class: 'muted small', id: 'shown', role: 'status' });
    this.canaryError = h('div', { id: 'canary-error' });
    this.tbody = h('tbody', { id: 'canary-rows' });
    const head = h('tr', null, CANARY_COLUMNS.map((c) => {
      const th = h('th', { scope: 'col', class: c.num ? 'num' : null, 'data-key': c.key },
        h('button', { type: 'button', class: 'sort', onclick: () => this.sortBy(c.key) }, c.title));
      return th;
    }));
    this.thead = head;
    this.planeSection = h('section', { class: 'panel', id: 'dataplanes' });
    root.replaceChildren(
      h('section', { class: 'panel' },
        h('div', { class: 'row spread' }, h('h2', null, 'Canaries'), this.count),
        h('div', { class: 'row' }, this.text, this.nsSelect),
        h('div', { class: 'row', style: { marginTop: '8px' } }, this.chips),
        this.canaryError,
        h('div', { class: 'table-wrap' }, h('table', { id: 'canaries' }, h('thead', null, head), this.tbody))),
      this.planeSection);
    this.markSort();
  }

  // load replaces every row (the stream's first message, and after a reconnect).
  load(o) {
    this.rows.clear();
    this.trs.clear();
    for (const r of o.canaries) this.rows.set(r.namespace + '/' + r.name, r);
    this.planes.clear();
    for (const d of o.dataplanes) this.planes.set(d.name, d);
    this.errors = o.errors || {};
    this.namespaceFixed = o.namespace || '';
    this.dirty.clear();
    this.schedulePlanes = true;
    this.render();
  }

  // upsertCanary takes a change of one row; the next frame redraws that row only, unless it
  // moved in the order or entered the filter.
  upsertCanary(key, row) {
    if (row) this.rows.set(key, row); else this.rows.delete(key);
    this.dirty.add(key);
    this.schedule();
  }

  upsertDataPlane(key, row) {
    if (row) this.planes.set(key, row); else this.planes.delete(key);
    this.schedulePlanes = true;
    this.schedule();
  }

  setErrors(errors) {
    this.errors = errors || {};
    this.schedulePlanes = true;
    this.full = true;
    this.schedule();
  }

  // redraw redraws every row on the next frame (ages move on).
  redraw() {
    this.trs.clear();
    this.full = true;
    this.schedule();
  }

  schedule() {
    if (this.scheduled) return;
    this.scheduled = true;
    requestAnimationFrame(() => { this.scheduled = false; this.flush(); });
  }

  flush() {
    const now = this.now();
    for (const key of this.dirty) {
      if (!this.full) this.full = !this.updateRow(key, now);
      else this.trs.delete(key);
    }
    this.dirty.clear();
    if (this.full) {
      this.render();
      return;
    }
    this.renderCounts();
    if (this.schedulePlanes) this.renderPlanes();
    this.schedulePlanes = false;
  }

  // updateRow redraws one row in place; false when the table needs a full redraw (a new row, or
  // one whose place in the order changed).
  updateRow(key, now) {
    const old = this.trs.get(key);
    const row = this.rows.get(key);
    this.trs.delete(key);
    if (!row) {
      if (old) old.remove();
      return true;
    }
    if (!old || !old.isConnected) return !this.matches(row);
    if (!this.matches(row)) {
      old.remove();
      return true;
    }
    const tr = this.rowElement(row, now);
    this.trs.set(key, tr);
    old.replaceWith(tr);
    const prev = tr.previousElementSibling;
    const next = tr.nextElementSibling;
    const ordered = (a, b) => !a || !b || !a.dataset.key || !b.dataset.key || this.compare(this.rows.get(a.dataset.key), this.rows.get(b.dataset.key)) <= 0;
    return ordered(prev, tr) && ordered(tr, next);
  }

  compare(a, b) {
    const { key, dir } = this.sort;
    const x = sortValue(a, key);
    const y = sortValue(b, key);
    if (x < y) return -dir;
    if (x > y) return dir;
    return (a.namespace + '/' + a.name).localeCompare(b.namespace + '/' + b.name);
  }

  sortBy(key) {
    this.sort = { key, dir: this.sort.key === key ? -this.sort.dir : 1 };
    this.markSort();
    this.render();
  }

  markSort() {
    for (const th of this.thead.children) {
      th.setAttribute('aria-sort', th.dataset.key === this.sort.key ? (this.sort.dir > 0 ? 'ascending' : 'descending') : 'none');
    }
  }

  matches(r) {
    const f = this.filter;
    if (f.namespace && r.namespace !== f.namespace) return false;
    if (f.phase && r.phase !== f.phase) return false;
    if (!f.text) return true;
    const hay = [r.namespace, r.name, r.phase, r.revision, r.promotedRevision, ...(r.currentImages || []), ...(r.newImages || []),
      r.holds ? r.holds.reason + ' ' + r.holds.message : ''].join(' ').toLowerCase();
    return hay.includes(f.text);
  }

  // renderCounts draws the counts per phase, the namespace list and the number of rows shown.
  renderCounts() {
    const all = [...this.rows.values()];
    const phases = new Map();
    const namespaces = new Set();
    let shown = 0;
    for (const r of all) {
      phases.set(r.phase, (phases.get(r.phase) || 0) + 1);
      namespaces.add(r.namespace);
      if (this.matches(r)) shown++;
    }
    this.renderChips(all.length, phases);
    this.renderNamespaces(namespaces);
    this.count.textContent = shown === all.length ? `${all.length} canaries` : `${shown} of ${all.length} canaries shown`;
  }

  render() {
    this.full = false;
    const now = this.now();
    const all = [...this.rows.values()];
    this.renderCounts();
    const shown = all.filter((r) => this.matches(r)).sort((a, b) => this.compare(a, b));
    const frag = document.createDocumentFragment();
    for (const r of shown) {
      const k = r.namespace + '/' + r.name;
      let tr = this.trs.get(k);
      if (!tr) {
        tr = this.rowElement(r, now);
        this.trs.set(k, tr);
      }
      frag.append(tr);
    }
    this.tbody.replaceChildren(frag);
    if (!all.length && !this.errors.canary) {
      this.tbody.append(h('tr', null, h('td', { colspan: CANARY_COLUMNS.length, class: 'empty' },
        this.namespaceFixed ? `No canaries in namespace ${this.namespaceFixed}.` : 'No canaries.')));
    }
    this.canaryError.replaceChildren(this.errors.canary ? h('p', { class: 'notice error' }, 'Listing canaries: ' + this.errors.canary) : '');
    if (this.schedulePlanes !== false) this.renderPlanes();
    this.schedulePlanes = false;
  }

  renderChips(total, phases) {
    const chip = (phase, label, n) => h('button', { type: 'button', 'aria-pressed': String(this.filter.phase === phase), 'data-phase': phase,
      onclick: () => { this.filter.phase = phase; this.render(); } }, `${label} ${n}`);
    this.chips.replaceChildren(chip('', 'All', total),
      ...[...phases.entries()].sort((a, b) => a[0].localeCompare(b[0])).map(([p, n]) => chip(p, p, n)));
  }

  renderNamespaces(namespaces) {
    const want = ['', ...[...namespaces].sort()];
    const have = [...this.nsSelect.options].map((o) => o.value);
    if (want.join('\n') === have.join('\n')) return;
    this.nsSelect.replaceChildren(...want.map((ns) => h('option', { value: ns, selected: ns === this.filter.namespace }, ns || 'All namespaces')));
  }

  rowElement(r, now) {
    const k = r.namespace + '/' + r.name;
    const imgs = (list) => (list || []).map((i) => imageTag(i.split('=').slice(1).join('='))).join(', ');
    const revision = r.newImages && r.newImages.length
      ? h('span', { class: 'mono small', title: `${(r.currentImages || []).join(', ')} → ${r.newImages.join(', ')}` },
        imgs(r.currentImages) || '?', ' → ', h('strong', null, imgs(r.newImages)))
      : h('span', { class: 'mono small', title: (r.currentImages || []).join(', ') }, imgs(r.currentImages) || (r.promotedRevision || '-'));
    return h('tr', { 'data-key': k, 'data-phase': r.phase, 'data-weight': r.weight },
      h('td', null, r.namespace),
      h('td', null, h('a', { href: `#/canary/${encodeURIComponent(r.namespace)}/${encodeURIComponent(r.name)}` }, r.name)),
      h('td', null, phaseBadge(r.phase), r.paused ? h('span', { class: 'badge phase-Waiting' }, 'paused') : null),
      h('td', { class: 'num nowrap' }, r.strategy === 'canary' ? weightBar(r.weight, r.maxWeight) : h('span', { class: 'muted small' }, r.strategy + ' '),
        ' ', h('span', { class: 'weight' }, `${r.weight}%`)),
      h('td', { class: 'num' + (r.failedChecks > 0 ? ' v-text-Fail' : '') }, `${r.failedChecks}/${r.threshold}`),
      h('td', null, revision),
      h('td', null, r.holds ? h('span', { class: 'holds', title: r.holds.message || '' }, r.holds.reason) : ''),
      h('td', { class: 'num nowrap' }, r.lastTransition ? ago(r.lastTransition, now) : '-'),
      h('td', { class: 'num nowrap' }, ago(r.created, now)));
  }

  renderPlanes() {
    const planes = [...this.planes.values()].sort((a, b) => a.name.localeCompare(b.name));
    const body = [];
    if (this.errors.dataplane) body.push(h('p', { class: 'notice warn' }, 'Listing data planes: ' + this.errors.dataplane));
    if (!planes.length && !this.errors.dataplane) body.push(empty('No data planes.'));
    if (planes.length) {
      body.push(h('div', { class: 'table-wrap' }, h('table', { id: 'dataplane-table' },
        h('thead', null, h('tr', null, ['Name', 'Mesh', 'Declared', 'Control plane', 'Current / desired', 'Wave', 'Phase'].map((t) => h('th', { scope: 'col' }, t)))),
        h('tbody', null, planes.map((d) => h('tr', { 'data-key': d.name },
          h('td', null, h('a', { href: `#/dataplane/${encodeURIComponent(d.name)}` }, d.name)),
          h('td', null, d.mesh),
          h('td', { class: 'mono' }, d.version || '-'),
          h('td', null, h('span', { class: 'mono' }, d.controlPlaneVersion || '-'), ' ',
            d.controlPlaneReady ? h('span', { class: 'v-text-Pass small' }, 'ready') : h('span', { class: 'v-text-Fail small' }, 'not ready')),
          h('td', { class: 'num' }, `${d.current} / ${d.desired}`),
          h('td', { class: 'num' }, d.waveCount ? `${d.wave} of ${d.waveCount - 1}` : '-'),
          h('td', null, phaseBadge(d.phase), d.paused ? h('span', { class: 'badge phase-Waiting' }, 'paused') : null)))))));
    }
    this.planeSection.replaceChildren(h('h2', null, 'Data planes'), ...body);
  }
}
