// Package webhooks runs a Canary's webhook calls (confirm-rollout, pre-rollout, rollout,
// confirm-traffic-increase, confirm-promotion, post-rollout, rollback, event) in the background,
// so a reconcile worker never waits for a hook's timeout.
//
// The canary controller decides when each webhook type runs; this package only runs calls. A
// reconcile asks Runner.Poll for a key of its choosing (canary UID, revision, hook name and check
// number): the first Poll starts the call and every Poll returns at once, Pending until the call
// has finished, then its final Result. Results live only in memory: a restarted controller polls
// again and the call runs again, which is why keys name the check, not the controller.
//
// A call is a POST of a JSON Payload; a 2xx answer passes. Each attempt is bounded by the hook's
// timeout (default 10s); hook.Retries failed attempts are retried within the same call. A call's
// whole time, from its first Poll (time queued for a slot included) to its answer, is bounded by
// its budget (budget.go), and the slots are shared fairly across namespaces and Canaries
// (fair.go): no tenant's hooks, however slow, delay another tenant's calls.
package webhooks
