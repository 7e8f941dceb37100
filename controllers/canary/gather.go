package canary

import (
	"context"
	"fmt"
	"sync"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/controllers/canary/plan"
	"sluice.dev/sluice/controllers/internal/reconcilekit"
)

// gather resolves the gates and runs the analysis the planner asks for. It reports done when the
// tick must end here (a stale cache, a webhook call made this very tick).
func (r *Reconciler) gather(ctx context.Context, tick *reconcilekit.Tick, canary *sluicev1.Canary, obs *observation) (ctrl.Result, bool, error) {
	o := &obs.o
	gatesDue := plan.GatesDue(*o)
	analysisDue := plan.AnalysisDue(*o)
	if len(gatesDue) > 0 || analysisDue && !tick.Kit().ShowsOwnWrite(canary) {
		// Gates and checks are side effects that must not run twice: act on a current Canary.
		// A check on the very version our last status patch produced needs no read around the
		// cache (economy.go); webhook gates, which call out, always read.
		if stale, err := tick.Kit().IsStale(ctx, canary); err != nil || stale {
			return reconcilekit.StaleResult(), true, err
		}
	}
	if len(gatesDue) > 0 {
		gates, answers, fresh := r.resolveGates(canary, *o)
		if fresh {
			// A call made this tick gets one short poll to answer (most do) before the run
			// goes on without it.
			return ctrl.Result{RequeueAfter: plan.GatePoll(canary.Spec)}, true, nil
		}
		// A call still pending holds only what its gate gates (plan's gates.go): the tick goes on.
		o.Gates, o.Answers = gates, answers
	}
	if analysisDue && !obs.analysisBroken {
		check, err := r.analyze(ctx, canary, *o)
		if ctx.Err() != nil {
			return ctrl.Result{}, true, ctx.Err()
		}
		if st := stallOf(err); st != nil {
			// The analysis cannot run as specified: no check, and the stall holds the run.
			if o.Stall == nil {
				o.Stall = st
			}
		} else if err != nil {
			return ctrl.Result{}, true, err
		} else {
			o.Check = check
		}
	}
	return ctrl.Result{}, false, nil
}

// checkMemo remembers the last check of each Canary with the round it belongs to, so a tick
// whose status write was lost (a conflict) takes the same check again instead of running it
// twice.
type checkMemo struct {
	mu     sync.Mutex
	checks map[client.ObjectKey]memoEntry
}

type memoEntry struct {
	round string
	check *plan.Check
}

func (m *checkMemo) get(key client.ObjectKey, round string) *plan.Check {
	m.mu.Lock()
	defer m.mu.Unlock()
	if e, ok := m.checks[key]; ok && e.round == round {
		return e.check
	}
	return nil
}

func (m *checkMemo) put(key client.ObjectKey, round string, c *plan.Check) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.checks == nil {
		m.checks = map[client.ObjectKey]memoEntry{}
	}
	m.checks[key] = memoEntry{round: round, check: c}
}

// checkRound names the check a status is due for: the run, its checks so far and the last step.
func checkRound(c *sluicev1.Canary, o plan.Observed) string {
	s := o.Status
	var last int64
	if s.LastStepTime != nil {
		last = s.LastStepTime.UnixNano()
	}
	return fmt.Sprintf("%s/%s/%d/%d/%d/%d", c.UID, o.Revision, s.Iterations, s.FailedChecks, s.ConsecutiveErrors, last)
}

// analyze runs the analysis of this round once. errors: stalled for an analysis that cannot run
// as specified.
func (r *Reconciler) analyze(ctx context.Context, canary *sluicev1.Canary, o plan.Observed) (*plan.Check, error) {
	key, round := client.ObjectKeyFromObject(canary), checkRound(canary, o)
	if c := r.checks.get(key, round); c != nil {
		return c, nil
	}
	check, err := r.Analyzer.Analyze(ctx, canary, o.Now)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, reconcilekit.Stalled(sluicev1.ReasonInvalidSpec, "analysis: %w", err)
	}
	c := &plan.Check{Outcome: check.Outcome(), Failed: check.Failed(), Summary: check.Summary(),
		Results: check.Results, WindowStart: check.WindowStart()}
	r.checks.put(key, round, c)
	return c, nil
}
