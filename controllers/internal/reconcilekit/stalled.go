package reconcilekit

import (
	"errors"
	"fmt"
)

// StalledError is a problem only a change to the spec or the cluster fixes: Tick.Settle turns it
// into Stalled=True with Reason and one warning event, and the object is looked at again after a
// while instead of with backoff.
type StalledError struct {
	// Reason is the condition and event reason, e.g. sluicev1.ReasonInvalidSpec.
	Reason string
	// Err is the root cause; its message is the condition's.
	Err error
}

func (e *StalledError) Error() string { return e.Err.Error() }
func (e *StalledError) Unwrap() error { return e.Err }

// Stalled returns a StalledError with reason and the error fmt.Errorf(format, args...) (use %w
// to keep a cause for errors.Is).
func Stalled(reason, format string, args ...any) error {
	return &StalledError{Reason: reason, Err: fmt.Errorf(format, args...)}
}

// AsStalled returns the StalledError in err's chain, if any.
func AsStalled(err error) (*StalledError, bool) {
	var st *StalledError
	ok := errors.As(err, &st)
	return st, ok
}
