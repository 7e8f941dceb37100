package webhooks

import (
	"time"
)

// State of a call.
type State string

// States of a call: Pending until it has finished, then Passed or Failed.
const (
	// Pending: the call is queued (no slot is free for it: fair.go) or in flight.
	Pending State = "Pending"
	// Passed: the hook answered 2xx.
	Passed State = "Passed"
	// Failed: every attempt failed (non-2xx answer, timeout or connection error).
	Failed State = "Failed"
)

// Result is the state of one call.
type Result struct {
	// State of the call.
	State State
	// Message explains the state: "queued" or "in flight" while Pending; the answer's status
	// ("HTTP 200 OK"), "timed out after 10s", or the connection error once finished. A non-2xx
	// answer is followed by up to 256 bytes of its body, on one line.
	Message string
	// Duration is the time since the first attempt started (Pending) or the time the whole
	// call took, retries and pauses included (Passed, Failed). Zero while queued.
	Duration time.Duration
	// Attempts made so far (1 + retries used).
	Attempts int
	// StatusCode of the last answer; 0 when there was none (timeout, connection error).
	StatusCode int
	// New is true for the Poll that started the call (its first): the caller may give a call
	// that was just made a moment to answer before deciding without it.
	New bool
}

// Done reports whether the call has finished (Passed or Failed).
func (r Result) Done() bool { return r.State == Passed || r.State == Failed }

// Payload is the JSON body POSTed to a webhook; the field names are Flagger's, plus "type".
type Payload struct {
	// Name and Namespace of the Canary.
	Name      string `json:"name"`
	Namespace string `json:"namespace"`
	// Phase of the Canary.
	Phase string `json:"phase"`
	// Checksum identifies the revision under test (status.lastAppliedSpec).
	Checksum string `json:"checksum"`
	// Metadata is the hook's metadata, overridden key by key by the caller's.
	Metadata map[string]string `json:"metadata,omitempty"`
	// Type is the webhook type, e.g. "confirm-promotion"; empty means the hook's type.
	Type string `json:"type"`
}
