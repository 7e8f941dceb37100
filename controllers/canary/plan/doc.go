// Package plan is the canary lifecycle as pure functions: given everything the controller
// observed in one tick (the Canary's spec and status, the target's revision, primary and canary
// readiness, the route's weights, the outcome of an analysis run), Decide returns the next status,
// the ordered actions to carry out, the events to record and when to look again. It does no I/O
// and reads no clock: Observed.Now is the only time, so whole rollouts are simulated in tests.
//
// A run shifts weights step by step, or, for a spec with analysis.match and analysis.iterations,
// is an A/B test (IsAB): the weight stays 0, the requests matching analysis.match go to the
// canary once it is ready, and iterations passing checks promote it (see ab.go); for a spec with
// analysis.iterations and no match it is a blue/green run (IsBlueGreen): the canary is analysed at
// weight 0 for iterations passing checks, then takes all traffic at once while the primary is
// promoted (see bluegreen.go).
package plan
