package promtest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// Result is the data of a /api/v1/query answer: ResultType is vector, scalar, matrix or string;
// Result is the raw JSON of the result.
type Result struct {
	ResultType string          `json:"resultType"`
	Result     json.RawMessage `json:"result"`
}

// Empty reports whether the result is an empty vector or matrix.
func (r Result) Empty() bool {
	return (r.ResultType == "vector" || r.ResultType == "matrix") && string(r.Result) == "[]"
}

// Query runs an instant query at ts (the server's now when ts is zero) and returns its data.
// errors: HTTP failures, an error status with Prometheus's message.
func (s *Server) Query(ctx context.Context, query string, ts time.Time) (Result, error) {
	v := url.Values{"query": {query}}
	if !ts.IsZero() {
		v.Set("time", strconv.FormatFloat(float64(ts.UnixMilli())/1000, 'f', -1, 64))
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.address+"/api/v1/query?"+v.Encode(), nil)
	if err != nil {
		return Result{}, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return Result{}, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return Result{}, err
	}
	var r struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   Result `json:"data"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		return Result{}, fmt.Errorf("query %q: HTTP %d: %w", query, resp.StatusCode, err)
	}
	if r.Status != "success" {
		return Result{}, fmt.Errorf("query %q: %s", query, r.Error)
	}
	return r.Data, nil
}

// WaitForQuery runs query every 200ms until it returns a non-empty result (live scraping needs a
// few seconds for the first samples). errors: ctx's error, with the last query error if any.
func (s *Server) WaitForQuery(ctx context.Context, query string) error {
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	var lastErr error
	for {
		r, err := s.Query(ctx, query, time.Time{})
		if err == nil && !r.Empty() {
			return nil
		}
		lastErr = err
		select {
		case <-ctx.Done():
			if lastErr != nil {
				return fmt.Errorf("waiting for %q: %w (last error: %v)", query, ctx.Err(), lastErr)
			}
			return fmt.Errorf("waiting for %q: %w", query, ctx.Err())
		case <-tick.C:
		}
	}
}
