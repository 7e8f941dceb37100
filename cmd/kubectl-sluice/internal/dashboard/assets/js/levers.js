// The levers: a button per lever that makes sense in the object's phase, a confirmation dialog,
// and a POST with the page's token. The server pulls the lever through the plugin's own command
// with the user's credentials; its answer (or the apiserver's refusal, verbatim) is shown.

import { h } from './util.js';

const WHAT = {
  promote: 'Approve the gates of the run in flight and skip to promotion (sluice.dev/promote).',
  abort: 'Roll the run in flight back now: all traffic returns to the primary (sluice.dev/abort).',
  retry: 'Run the failed revision again (sluice.dev/retry).',
  pause: 'Suspend: the controller stops acting; traffic and pods stay as they are (spec.suspend=true).',
  resume: 'Resume: the controller acts again (spec.suspend=false).',
  approve: 'Let the fleet waves start after the canary wave (sluice.dev/approve-fleet).',
};

const DATAPLANE_WHAT = {
  abort: 'Roll the wave in flight back now (sluice.dev/abort).',
  retry: 'Run the declared version again after a rollback (sluice.dev/retry).',
};

const DANGER = new Set(['abort']);

// LeverBar keeps its buttons, dialog and last answer across page updates.
export class LeverBar {
  constructor(kind, target, token) {
    this.kind = kind;
    this.target = target; // {namespace, name}
    this.token = token;
    this.levers = null;
    this.buttons = h('div', { class: 'levers', id: 'levers', role: 'group', 'aria-label': 'Levers' });
    this.answer = h('div', { id: 'lever-answer', role: 'status', 'aria-live': 'polite' });
    this.dialogText = h('p', { id: 'confirm-text' });
    this.confirmButton = h('button', { type: 'button', id: 'confirm', class: 'primary', onclick: () => this.pull() });
    this.dialog = h('dialog', { id: 'confirm-dialog', 'aria-labelledby': 'confirm-title' },
      h('h2', { id: 'confirm-title' }, 'Confirm'), this.dialogText,
      h('div', { class: 'actions' }, h('button', { type: 'button', id: 'cancel', onclick: () => this.dialog.close() }, 'Cancel'), this.confirmButton));
    this.el = h('div', null, this.buttons, this.answer, this.dialog);
  }

  // update shows the levers listed by the server for the object's current phase.
  update(levers) {
    const list = levers || [];
    if (this.levers && this.levers.join() === list.join()) return;
    this.levers = list;
    const focused = document.activeElement && document.activeElement.dataset ? document.activeElement.dataset.lever : null;
    this.buttons.replaceChildren(...list.map((l) => h('button', { type: 'button', 'data-lever': l, class: DANGER.has(l) ? 'danger' : null,
      title: this.describe(l), onclick: () => this.ask(l) }, l[0].toUpperCase() + l.slice(1))));
    const again = focused && this.buttons.querySelector(`[data-lever="${focused}"]`);
    if (again) again.focus();
  }

  describe(lever) {
    return (this.kind === 'dataplane' && DATAPLANE_WHAT[lever]) || WHAT[lever] || lever;
  }

  ask(lever) {
    this.lever = lever;
    const who = this.kind === 'dataplane' ? `data plane ${this.target.name}` : `canary ${this.target.namespace}/${this.target.name}`;
    this.dialogText.textContent = `${lever[0].toUpperCase() + lever.slice(1)} ${who}? ${this.describe(lever)}`;
    this.confirmButton.textContent = lever[0].toUpperCase() + lever.slice(1);
    this.confirmButton.className = DANGER.has(lever) ? 'danger primary' : 'primary';
    this.dialog.showModal();
    this.dialog.querySelector('#cancel').focus();
  }

  async pull() {
    this.dialog.close();
    const lever = this.lever;
    this.answer.replaceChildren(h('p', { class: 'notice' }, `${lever}…`));
    let text;
    let ok = false;
    try {
      const res = await fetch('/api/levers', {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', 'X-Sluice-Token': this.token },
        body: JSON.stringify({ lever, kind: this.kind, namespace: this.target.namespace || '', name: this.target.name }),
      });
      const body = await res.json();
      ok = res.ok && body.ok;
      text = ok ? body.message : body.error;
    } catch (err) {
      text = 'The dashboard did not answer: ' + err.message;
    }
    this.answer.replaceChildren(h('p', { class: 'notice ' + (ok ? 'ok' : 'error'), role: ok ? null : 'alert', 'data-ok': String(ok) }, text));
  }
}
