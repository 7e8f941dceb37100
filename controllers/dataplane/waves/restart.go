package waves

import (
	"fmt"
	"strings"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
)

// direction is where a wave's restarts go: forward to the target, or back to each namespace's
// previous version, under one token.
type direction struct {
	token string
	// want returns the version the pods of a namespace must run; "" means none (the namespace is
	// left as it is).
	want func(namespace string) string
}

// restartStep plans the restarts and evictions of wave i in direction dir and reports whether
// the wave converged: every namespace pinned to its wanted version, every workload settled with
// all its running meshed pods on it, and no pod that should run the proxy without it. What keeps
// the wave from converging is added to d.Blockers.
//
// Each workload is restarted at most once per direction: a restart is recorded in the wave's
// status with the token, and a rolling workload whose template already carries the token (the
// controller stopped between the restart and the status write) is recorded without a second
// restart. At most MaxUnavailable workloads are in flight (restarted, not yet settled on the
// wanted version); an OnDelete workload gets one eviction at a time, the next only when the last
// evicted pod is gone and every pod is ready again.
func (d *Decision) restartStep(o Observed, i int, dir direction) ([]Action, bool) {
	w := &d.Status.Waves[i]
	type candidate struct {
		ns   string
		wl   *Workload
		want string
	}
	var (
		candidates []candidate
		evictions  []Action
		inflight   int
		done       = true
	)
	for _, name := range w.Namespaces {
		ns := o.namespace(name)
		want := dir.want(name)
		if ns == nil || want == "" {
			continue
		}
		pinned := !ns.Pinnable || ns.Pin == want
		if !pinned {
			done = false
		}
		if len(ns.Unmeshed) > 0 {
			done = false
			d.block(name, sluicev1.ReasonUnmeshedPods, "%d pods in %s came back without the proxy (is the injector available?): %s",
				len(ns.Unmeshed), name, strings.Join(capped(ns.Unmeshed, 5), ", "))
		}
		for k := range ns.Workloads {
			wl := &ns.Workloads[k]
			stale := wl.stale(want)
			settled := wl.settled()
			rec := findRestart(w, wl.Kind, name, wl.Name, dir.token)
			if len(stale) == 0 && settled {
				if rec != nil && !rec.Done {
					rec.Done = true
				}
				continue
			}
			done = false
			if wl.Problem != "" {
				d.block(name, sluicev1.ReasonFailedCreate, "%s %s/%s cannot create pods: %s", wl.Kind, name, wl.Name, wl.Problem)
			}
			switch {
			case rec != nil && rec.Done:
				if len(stale) > 0 && settled {
					d.block(name, sluicev1.ReasonVersionPinnedInTemplate, "%s", stuck(name, wl, stale, want))
				}
			case rec != nil:
				if len(stale) > 0 && settled && rolling(wl.Method) {
					// Rolled out and still not on the wanted version: restarting again would not help.
					rec.Done = true
					d.block(name, sluicev1.ReasonVersionPinnedInTemplate, "%s", stuck(name, wl, stale, want))
					continue
				}
				inflight++
				if wl.Method == sluicev1.RestartEvict && len(stale) > 0 && settled && !wl.hasPod(rec.LastEvictedUID) {
					evictions = append(evictions, evict(i, name, wl, stale, dir.token))
				}
			case len(stale) == 0:
				// Not ours to restart: its own rollout is in progress.
			case !pinned:
				// Restarting before the pin is in place would bring the same version back.
			case rolling(wl.Method) && wl.Token == dir.token:
				// Restarted by an earlier tick whose status write was lost: record it, do not repeat it.
				w.Restarts = append(w.Restarts, sluicev1.WorkloadRestart{Kind: wl.Kind, Namespace: name, Name: wl.Name,
					Method: wl.Method, Token: dir.token})
				w.Restarted++
				inflight++
			default:
				candidates = append(candidates, candidate{ns: name, wl: wl, want: want})
			}
		}
	}
	actions := evictions
	max := MaxUnavailable(o.Spec)
	for _, c := range candidates {
		if inflight >= max {
			break
		}
		switch c.wl.Method {
		case sluicev1.RestartRollout, sluicev1.RestartAt:
			actions = append(actions, Action{Type: ActionRestart, Wave: i, Namespace: c.ns, Kind: c.wl.Kind, Name: c.wl.Name, Value: dir.token})
		case sluicev1.RestartEvict:
			if !c.wl.settled() {
				continue // wait until every pod is back and ready before the first eviction
			}
			actions = append(actions, evict(i, c.ns, c.wl, c.wl.stale(c.want), dir.token))
		}
		inflight++
	}
	return actions, done
}

// rolling reports whether method m replaces the pods through the workload's own controller (a
// template annotation, a Rollout's restartAt) rather than by evictions.
func rolling(m sluicev1.RestartMethod) bool {
	return m == sluicev1.RestartRollout || m == sluicev1.RestartAt
}

// evict picks the pod to evict next: a StatefulSet's highest ordinal first (the order its own
// rolling update uses), otherwise by name.
func evict(wave int, ns string, wl *Workload, stale []Pod, tok string) Action {
	p := stale[0]
	if wl.Kind == "StatefulSet" {
		p = stale[len(stale)-1]
		for _, s := range stale {
			if ordinal(s.Name) > ordinal(p.Name) {
				p = s
			}
		}
	}
	return Action{Type: ActionEvict, Wave: wave, Namespace: ns, Kind: wl.Kind, Name: wl.Name, Pod: p.Name, UID: p.UID, Value: tok}
}

func ordinal(pod string) int {
	i := strings.LastIndexByte(pod, '-')
	n := 0
	for _, c := range pod[i+1:] {
		if c < '0' || c > '9' {
			return -1
		}
		n = n*10 + int(c-'0')
	}
	return n
}

func stuck(ns string, wl *Workload, stale []Pod, want string) string {
	return fmt.Sprintf("%s %s/%s was restarted and %d of its pods still run %s, not %s: is the version pinned in its pod template (%s)?",
		wl.Kind, ns, wl.Name, len(stale), versionOf(stale), want, "config.linkerd.io/proxy-version or istio.io/rev")
}

func versionOf(pods []Pod) string {
	if len(pods) == 0 || pods[0].Version == "" {
		return "an unknown version"
	}
	return pods[0].Version
}
