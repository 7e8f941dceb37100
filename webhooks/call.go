package webhooks

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"sluice.dev/sluice/egress"
)

const (
	// maxBodyInLog bounds the part of a failing answer's body written to the debug log.
	maxBodyInLog = 256
	// maxDrain bounds how much of an answer is read so its connection can be reused.
	maxDrain = 64 << 10
)

// run makes up to 1+hook.Retries attempts, pausing RetryDelay between them, and returns the
// final Result. It stops early when c is cancelled (expiry, Close).
func (r *Runner) run(c *call) Result {
	start := time.Now()
	if c.hook.URL == "" { // a manual gate: the controller approves it, there is nothing to call
		return Result{State: Failed, Message: fmt.Sprintf("webhook %q has no URL", c.hook.Name)}
	}
	timeout, err := hookTimeout(c.hook.Timeout)
	if err != nil {
		return Result{State: Failed, Message: err.Error()}
	}
	body, err := json.Marshal(c.payload)
	if err != nil {
		return Result{State: Failed, Message: "encoding payload: " + err.Error()}
	}
	// Every attempt ends by c.deadline, the end of the call's budget (budget.go).
	timeout, attempts := min(timeout, MaxTimeout), attemptsOf(c.hook.Retries)
	res := queuedTooLong(c.queueBudget())
	for n := 1; n <= attempts; n++ {
		left := time.Until(c.deadline)
		if left <= 0 {
			break
		}
		r.setAttempt(c, n)
		res = r.attempt(c.ctx, c.hook.URL, body, attemptTimeout(timeout, left))
		res.Attempts = n
		if res.State == Passed || n == attempts || time.Until(c.deadline) <= r.retryDelay || !sleep(c.ctx, r.retryDelay) {
			break
		}
	}
	res.Duration = time.Since(start)
	return res
}

// attempt POSTs body to address once, bounded by timeout. The destination must pass the egress
// policy, redirects are not followed, and a failing answer's body and a failed call's error go
// only to the debug log: Result.Message (which reaches the Canary's status and events) holds the
// code and the standard reason phrase, or a fixed reason (egress.Reason), never a resolved
// address, a port or a certificate's names.
func (r *Runner) attempt(parent context.Context, address string, body []byte, timeout time.Duration) Result {
	if err := r.egress.CheckURL(address); err != nil {
		return Result{State: Failed, Message: "webhook URL refused: " + err.Error()}
	}
	ctx, cancel := context.WithTimeout(parent, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, address, bytes.NewReader(body))
	if err != nil {
		return Result{State: Failed, Message: "invalid webhook URL: " + cause(err).Error()}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "sluice")
	resp, err := r.client.Do(req)
	if err != nil {
		switch {
		case parent.Err() != nil:
			return Result{State: Failed, Message: "cancelled"}
		case errors.Is(err, context.DeadlineExceeded):
			return Result{State: Failed, Message: fmt.Sprintf("timed out after %s", timeout)}
		}
		r.log.V(1).Info("Webhook call failed", "host", req.URL.Host, "error", cause(err).Error())
		return Result{State: Failed, Message: egress.Reason(err)}
	}
	defer func() {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxDrain))
		_ = resp.Body.Close()
	}()
	res := Result{StatusCode: resp.StatusCode, Message: egress.StatusMessage(resp.StatusCode), State: Failed}
	if resp.StatusCode >= 200 && resp.StatusCode <= 299 {
		res.State = Passed
		return res
	}
	if log := r.log.V(1); log.Enabled() {
		snippet, _ := io.ReadAll(io.LimitReader(resp.Body, maxBodyInLog))
		log.Info("Webhook answered with an error", "host", req.URL.Host, "status", resp.StatusCode,
			"body", oneLine(strings.ToValidUTF8(string(snippet), "")))
	}
	return res
}

// hookTimeout parses a webhook's timeout; empty or zero means DefaultTimeout.
func hookTimeout(s string) (time.Duration, error) {
	if s == "" {
		return DefaultTimeout, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("invalid webhook timeout %q", s)
	}
	if d == 0 {
		return DefaultTimeout, nil
	}
	return d, nil
}

// sleep waits d or until ctx is done; it reports whether d elapsed.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// cause strips the "Post "URL": " prefix of a *url.Error: the URL is in the Canary already.
func cause(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// oneLine collapses whitespace runs (newlines included) to single spaces and trims.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
