package egress

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"net/http"
)

// The reasons Reason gives. A failed call reaches status, conditions and events as one of these
// (or, for an answer, StatusMessage): never the error's own text, which names resolved addresses
// and ports, and certificates' names and issuers.
const (
	ReasonRefused     = "refused by the egress policy"
	ReasonUnreachable = "unreachable"
	ReasonTimeout     = "timed out"
	ReasonTLS         = "TLS handshake failed"
	ReasonCancelled   = "cancelled"
)

// Reason is the fixed reason for a failed outbound call err (a dial, TLS or transport error, or a
// refusal): ReasonRefused, ReasonTimeout, ReasonTLS (certificate not trusted, wrong name, expired,
// a protocol or alert error), ReasonCancelled, or ReasonUnreachable for anything else (connection
// refused or reset, no route, a name that does not resolve). "" for a nil err. The error itself
// belongs in the debug log.
func Reason(err error) string {
	var netErr net.Error
	switch {
	case err == nil:
		return ""
	case errors.Is(err, ErrRefused):
		return ReasonRefused
	case errors.Is(err, context.Canceled):
		return ReasonCancelled
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &netErr) && netErr.Timeout():
		return ReasonTimeout
	case isTLS(err):
		return ReasonTLS
	}
	return ReasonUnreachable
}

// Summary is err with its message replaced by Reason(err), for status, conditions and events;
// errors.Is and errors.As still see err. nil for a nil err.
func Summary(err error) error {
	if err == nil {
		return nil
	}
	return &summary{err: err}
}

type summary struct{ err error }

func (s *summary) Error() string { return Reason(s.err) }
func (s *summary) Unwrap() error { return s.err }

// isTLS reports whether err comes from a TLS handshake: certificate verification, a record that is
// not TLS (http.ErrSchemeMismatch when the server speaks plain HTTP), or an alert sent or received
// (crypto/tls reports those as a *net.OpError with Op "local error" or "remote error").
func isTLS(err error) bool {
	var (
		verify    *tls.CertificateVerificationError
		record    tls.RecordHeaderError
		alert     tls.AlertError
		unknownCA x509.UnknownAuthorityError
		hostname  x509.HostnameError
		invalid   x509.CertificateInvalidError
		roots     x509.SystemRootsError
		opErr     *net.OpError
	)
	switch {
	case errors.Is(err, http.ErrSchemeMismatch), errors.As(err, &verify), errors.As(err, &record), errors.As(err, &alert),
		errors.As(err, &unknownCA), errors.As(err, &hostname), errors.As(err, &invalid), errors.As(err, &roots):
		return true
	case errors.As(err, &opErr):
		return opErr.Op == "local error" || opErr.Op == "remote error"
	}
	return false
}
