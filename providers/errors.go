package providers

import "errors"

// ErrInvalidRoute is the one way a provider says "this route or this Canary's spec can never work
// as it is": only a change to the spec or to the route fixes it, so retrying is pointless. Every
// such sentinel of every provider is made with Permanent and matches it with errors.Is; the
// controller turns an error that does (IsPermanent) into a Stalled condition with the sentinel's
// reason instead of retrying with backoff. Providers never return it bare.
var ErrInvalidRoute = errors.New("route or spec cannot work as it is")

// PermanentError is a provider sentinel that matches ErrInvalidRoute. Compare against the
// provider's exported variable with errors.Is as usual.
type PermanentError struct {
	// Reason is the condition reason the Canary stalls with (a sluicev1.Reason* value).
	Reason string
	msg    string
}

// Permanent returns a new sentinel with text msg that matches ErrInvalidRoute and stalls a Canary
// with reason.
func Permanent(reason, msg string) *PermanentError { return &PermanentError{Reason: reason, msg: msg} }

func (e *PermanentError) Error() string { return e.msg }

// Is makes every PermanentError match ErrInvalidRoute.
func (e *PermanentError) Is(target error) bool { return target == ErrInvalidRoute }

// IsPermanent reports whether err says the route or spec can never work as it is, and the
// reason to stall with (that of the first sentinel in err's chain).
func IsPermanent(err error) (reason string, ok bool) {
	var p *PermanentError
	if !errors.As(err, &p) {
		return "", false
	}
	return p.Reason, true
}
