package v1alpha1

// Request annotations: anyone who can edit the Canary (the kubectl-sluice plugin, a GitOps
// commit) asks the controller to act by setting one of these to a new value, conventionally the
// RFC 3339 time of the request. Each new value is one request; the controller records the last
// value it handled in status, so a leftover annotation never acts on a later run.
const (
	// AnnotationPromote approves the gates of the run in flight and skips to promotion.
	AnnotationPromote = "sluice.dev/promote"
	// AnnotationAbort rolls the run in flight back now.
	AnnotationAbort = "sluice.dev/abort"
	// AnnotationRetry runs the failed revision again without a change to the target.
	AnnotationRetry = "sluice.dev/retry"
)
