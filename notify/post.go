package notify

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"sigs.k8s.io/controller-runtime/pkg/log"

	"sluice.dev/sluice/egress"
)

const (
	// maxDrain bounds how much of a response body is read before the connection is reused.
	maxDrain = 64 << 10
	// maxBodyInLog bounds the part of a failing answer's body written to the debug log.
	maxBodyInLog = 256
)

// postJSON POSTs v as JSON to address through c. errors: a non-2xx answer ("HTTP 400 Bad
// Request": the code and the standard reason phrase, the body only in the debug log), or the
// request error.
func postJSON(ctx context.Context, c *http.Client, address string, v any) error {
	body, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encoding payload: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, address, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", DefaultUsername)
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer func() {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxDrain))
		_ = resp.Body.Close()
	}()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		// The body is for the debug log only: status and events get the code.
		if l := log.FromContext(ctx).V(1); l.Enabled() {
			body, _ := io.ReadAll(io.LimitReader(resp.Body, maxBodyInLog))
			l.Info("Alert provider answered with an error", "host", req.URL.Host, "status", resp.StatusCode,
				"body", strings.ToValidUTF8(string(body), ""))
		}
		return errors.New(egress.StatusMessage(resp.StatusCode))
	}
	return nil
}
