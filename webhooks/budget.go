package webhooks

import (
	"fmt"
	"time"
)

// Bounded call time.
//
// A gate's answer is due within its call budget, counted from the first Poll of its key: the time
// queued for a slot, every attempt and the pauses between them. A call that finds no free slot
// within one attempt's timeout fails ("queued for 10s, no slot free") instead of waiting behind
// other calls for ever; an attempt never runs past the budget. The API bounds the parts
// (webhooks[].timeout at most MaxTimeout, timeout × (1 + retries) at most MaxCallTime); the
// runner enforces the same bounds on objects admitted before them.

// MaxTimeout is the longest timeout of one attempt (the CRD's maximum of webhooks[].timeout).
const MaxTimeout = 5 * time.Minute

// MaxCallTime bounds a call's whole budget, retries and pauses included.
const MaxCallTime = 10 * time.Minute

// budget is the time a call may take from its first Poll: each attempt's timeout and the pauses
// between attempts, at most MaxCallTime.
func budget(timeout time.Duration, attempts int, pause time.Duration) time.Duration {
	return min(MaxCallTime, time.Duration(attempts)*timeout+time.Duration(attempts-1)*pause)
}

// attemptsOf is the number of attempts a hook with retries makes.
func attemptsOf(retries int32) int { return 1 + max(0, int(retries)) }

// queueBudget is how long a call may wait for a slot: one attempt's timeout (default 10s, at most
// MaxTimeout). An invalid timeout counts as the default: the call fails with its error once it
// starts.
func (c *call) queueBudget() time.Duration {
	timeout, err := hookTimeout(c.hook.Timeout)
	if err != nil {
		timeout = DefaultTimeout
	}
	return min(timeout, MaxTimeout)
}

// queuedTooLong is the final Result of a call that waited longer than its queue budget.
func queuedTooLong(queueBudget time.Duration) Result {
	return Result{State: Failed, Message: fmt.Sprintf("queued for %s, no slot free", queueBudget)}
}

// budget is c's whole budget (an invalid timeout counts as the default: the call fails at once).
func (c *call) budget(pause time.Duration) time.Duration {
	timeout, err := hookTimeout(c.hook.Timeout)
	if err != nil {
		timeout = DefaultTimeout
	}
	return budget(min(timeout, MaxTimeout), attemptsOf(c.hook.Retries), pause)
}

// budgetSlack is how far an attempt may run past its call's budget so that an attempt the budget
// leaves (almost) whole keeps the hook's own timeout.
const budgetSlack = 50 * time.Millisecond

// attemptTimeout is the timeout of an attempt with left of its call's budget: the hook's timeout,
// or what is left of the budget when that is shorter (by more than budgetSlack, so that the time
// a call takes to start does not shave its first attempt), to the millisecond.
func attemptTimeout(timeout, left time.Duration) time.Duration {
	if left >= timeout-budgetSlack {
		return timeout
	}
	return max(left.Round(time.Millisecond), time.Millisecond)
}
