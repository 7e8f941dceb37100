package webhooks

import (
	"slices"
	"time"
)

// Fair shares of the slots.
//
// Calls are owned by the Canary of their Payload (namespace and name). A call starts only while
// its Canary runs fewer than MaxInFlightPerCanary calls and its namespace fewer than
// MaxInFlightPerNamespace, besides the global MaxInFlight; fire-and-forget calls use at most half
// of each bound (at least one), so gates always have room. Among the calls that may start, the
// namespace with the fewest calls in flight goes first, then within it the Canary with the fewest,
// then the call queued earliest. A namespace whose calls hang holds at most its own share: the
// other namespaces' calls start as soon as a slot frees, never behind its queue.

// class is what a call is for: a gate (polled by key) or fire-and-forget.
type class int

const (
	gateCall class = iota
	eventCall
	classes
)

func classOf(c *call) class {
	if c.key == "" {
		return eventCall
	}
	return gateCall
}

// load counts the calls in flight of one scope (the runner, a namespace or a Canary) by class.
type load [classes]int

func (l load) total() int { return l[gateCall] + l[eventCall] }

// admits reports whether a call of class k may start in a scope with load l and bound limit:
// fewer than limit in flight, and for fire-and-forget calls fewer than half of it (at least one).
func (l load) admits(k class, limit int) bool {
	if l.total() >= limit {
		return false
	}
	return k == gateCall || l[eventCall] < max(1, limit/2)
}

// namespaceQueue holds one namespace's Canaries with calls queued or in flight.
type namespaceQueue struct {
	name     string
	running  load
	canaries map[string]*canaryQueue // by name
	events   int                     // fire-and-forget calls queued
}

// canaryQueue holds one Canary's calls not started yet, oldest first.
type canaryQueue struct {
	name    string
	running load
	queue   []*call
}

// fairQueue is the runner's queue of calls not started yet. Guarded by Runner.mu.
type fairQueue struct {
	namespaces map[string]*namespaceQueue
	running    load
	queued     int
}

// limits are the bounds a call must fit to start.
type limits struct {
	global, perNamespace, perCanary int
}

func (q *fairQueue) scopes(c *call) (*namespaceQueue, *canaryQueue) {
	if q.namespaces == nil {
		q.namespaces = map[string]*namespaceQueue{}
	}
	ns := q.namespaces[c.payload.Namespace]
	if ns == nil {
		ns = &namespaceQueue{name: c.payload.Namespace, canaries: map[string]*canaryQueue{}}
		q.namespaces[ns.name] = ns
	}
	cq := ns.canaries[c.payload.Name]
	if cq == nil {
		cq = &canaryQueue{name: c.payload.Name}
		ns.canaries[cq.name] = cq
	}
	return ns, cq
}

// push queues c behind its Canary's earlier calls.
func (q *fairQueue) push(c *call) {
	ns, cq := q.scopes(c)
	cq.queue = append(cq.queue, c)
	q.queued++
	if classOf(c) == eventCall {
		ns.events++
	}
}

// queuedEvents is the number of fire-and-forget calls namespace ns has queued.
func (q *fairQueue) queuedEvents(ns string) int {
	if n := q.namespaces[ns]; n != nil {
		return n.events
	}
	return 0
}

// pop removes and returns the call to start next within lim, or nil when none may start. skip
// reports calls that must not start any more (dropped, or failed while queued): they are removed
// on the way and handed to discard.
func (q *fairQueue) pop(lim limits, skip func(*call) bool, discard func(*call)) *call {
	var best *call
	var bestNS *namespaceQueue
	var bestCQ *canaryQueue
	for _, ns := range q.namespaces {
		for _, cq := range ns.canaries {
			cq.queue = slices.DeleteFunc(cq.queue, func(c *call) bool {
				if !skip(c) {
					return false
				}
				q.removed(ns, c)
				discard(c)
				return true
			})
			c := q.startable(ns, cq, lim)
			if c != nil && (best == nil || before(ns, cq, c, bestNS, bestCQ, best)) {
				best, bestNS, bestCQ = c, ns, cq
			}
		}
		q.tidy(ns)
	}
	if best == nil {
		return nil
	}
	bestCQ.queue = slices.DeleteFunc(bestCQ.queue, func(c *call) bool { return c == best })
	q.removed(bestNS, best)
	k := classOf(best)
	q.running[k]++
	bestNS.running[k]++
	bestCQ.running[k]++
	return best
}

// startable is the oldest call of cq that fits the bounds, or nil.
func (q *fairQueue) startable(ns *namespaceQueue, cq *canaryQueue, lim limits) *call {
	for _, c := range cq.queue {
		k := classOf(c)
		if q.running.admits(k, lim.global) && ns.running.admits(k, lim.perNamespace) && cq.running.admits(k, lim.perCanary) {
			return c
		}
	}
	return nil
}

// before orders two startable calls: the namespace with fewer calls in flight first, then the
// Canary with fewer, then the call queued first (then by namespace and name, for a stable order).
func before(ns *namespaceQueue, cq *canaryQueue, c *call, bns *namespaceQueue, bcq *canaryQueue, b *call) bool {
	if a, z := ns.running.total(), bns.running.total(); a != z {
		return a < z
	}
	if a, z := cq.running.total(), bcq.running.total(); a != z {
		return a < z
	}
	if !c.queuedAt.Equal(b.queuedAt) {
		return c.queuedAt.Before(b.queuedAt)
	}
	if ns.name != bns.name {
		return ns.name < bns.name
	}
	return cq.name < bcq.name
}

func (q *fairQueue) removed(ns *namespaceQueue, c *call) {
	q.queued--
	if classOf(c) == eventCall {
		ns.events--
	}
}

// done releases the slot of a call that ran.
func (q *fairQueue) done(c *call) {
	k := classOf(c)
	q.running[k]--
	ns := q.namespaces[c.payload.Namespace]
	if ns == nil {
		return
	}
	ns.running[k]--
	if cq := ns.canaries[c.payload.Name]; cq != nil {
		cq.running[k]--
	}
	q.tidy(ns)
}

// tidy forgets the Canaries of ns, and ns itself, with nothing queued or in flight.
func (q *fairQueue) tidy(ns *namespaceQueue) {
	for name, cq := range ns.canaries {
		if len(cq.queue) == 0 && cq.running.total() == 0 {
			delete(ns.canaries, name)
		}
	}
	if len(ns.canaries) == 0 && ns.running.total() == 0 {
		delete(q.namespaces, ns.name)
	}
}

// drain removes every queued call and hands it to discard.
func (q *fairQueue) drain(discard func(*call)) {
	for _, ns := range q.namespaces {
		for _, cq := range ns.canaries {
			for _, c := range cq.queue {
				discard(c)
			}
			cq.queue = nil
		}
		ns.events = 0
		q.tidy(ns)
	}
	q.queued = 0
}

// queuedFor is how long c has waited for a slot at now.
func (c *call) queuedFor(now time.Time) time.Duration { return now.Sub(c.queuedAt) }
