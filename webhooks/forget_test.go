package webhooks

// forget drops the call named key, as expiry does: a running or queued call is cancelled, a
// finished result is discarded, and the next Poll of key starts a new call. Tests use it to
// check results persist until then.
func (r *Runner) forget(key string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if c := r.calls[key]; c != nil {
		r.dropLocked(c)
	}
}
