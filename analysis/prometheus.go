package analysis

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	promapi "github.com/prometheus/client_golang/api"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"sluice.dev/sluice/egress"
)

// server is a Prometheus endpoint with the credentials and TLS setting to reach it.
type server struct {
	address            string // e.g. http://prometheus.monitoring:9090
	creds              credentials
	insecureSkipVerify bool
}

// clientKey identifies one cached client. Credentials are kept as a hash.
type clientKey struct {
	address            string
	creds              [sha256.Size]byte
	insecureSkipVerify bool
}

func (s server) key() clientKey {
	return clientKey{address: s.address, creds: s.creds.fingerprint(), insecureSkipVerify: s.insecureSkipVerify}
}

// maxClients bounds the client cache; when full it starts over (rotated credentials leave stale
// entries behind, and there are rarely more than a handful of servers).
const maxClients = 128

type cachedClient struct {
	api       promv1.API
	transport *http.Transport
}

// clientCache holds one Prometheus client per (address, credentials, TLS setting). It is safe for
// concurrent use.
type clientCache struct {
	egress  *egress.Policy
	mu      sync.Mutex
	clients map[clientKey]cachedClient
}

func newClientCache(policy *egress.Policy) *clientCache {
	return &clientCache{egress: policy, clients: map[clientKey]cachedClient{}}
}

// get returns the client for s, creating it on first use. errors: an invalid address.
func (c *clientCache) get(s server) (promv1.API, error) {
	k := s.key()
	c.mu.Lock()
	defer c.mu.Unlock()
	if cc, ok := c.clients[k]; ok {
		return cc.api, nil
	}
	if err := checkAddress(s.address); err != nil {
		return nil, err
	}
	if err := c.egress.CheckURL(s.address); err != nil {
		return nil, fmt.Errorf("metrics server address %s: %w", hostOf(s.address), err)
	}
	// Every connection passes the egress policy; no proxy, no redirects (a redirect would carry
	// the request, and the credentials the transport adds, to an address nobody configured).
	transport := c.egress.Transport(&tls.Config{
		MinVersion: tls.VersionTLS12,
		// Set only when the MetricTemplate asks for it (insecureSkipVerify).
		InsecureSkipVerify: s.insecureSkipVerify, //nolint:gosec // user opt-in per MetricTemplate
	})
	var rt http.RoundTripper = transport
	if s.creds.authorization != "" {
		u, _ := url.Parse(s.address) // checked above
		rt = authTransport{next: transport, authorization: s.creds.authorization, host: u.Host}
	}
	cl, err := promapi.NewClient(promapi.Config{Address: s.address, Client: c.egress.Client(rt)})
	if err != nil {
		return nil, fmt.Errorf("metrics server address %q: %w", redacted(s.address), err)
	}
	if len(c.clients) >= maxClients {
		for key, old := range c.clients {
			old.transport.CloseIdleConnections()
			delete(c.clients, key)
		}
	}
	cc := cachedClient{api: promv1.NewAPI(cl), transport: transport}
	c.clients[k] = cc
	return cc.api, nil
}

// len returns the number of cached clients.
func (c *clientCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.clients)
}

// checkAddress reports an address that is not an absolute http(s) URL.
func checkAddress(address string) error {
	u, err := url.Parse(address)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("metrics server address %q is not an http:// or https:// URL", address)
	}
	return nil
}

// query runs an instant query at ts (the server's now when ts is zero) with Options.QueryTimeout,
// on both the client and the server side. errors: ErrUnreachable (network error, timeout, HTTP
// error such as 401 or 503, naming the address); a query the server rejected (bad_data,
// execution, timeout, canceled), naming the address; ErrPartial when Prometheus answered with
// warnings (a partial result, e.g. a remote store that did not answer), naming them. A partial
// result is never judged.
func (e *Engine) query(ctx context.Context, s server, q string, ts time.Time) (model.Value, error) {
	api, err := e.clients.get(s)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, e.opts.QueryTimeout)
	defer cancel()
	v, warnings, _, err := api.Query(ctx, q, ts, promv1.WithTimeout(e.opts.QueryTimeout))
	if err != nil {
		return nil, queryError(ctx, s.address, err)
	}
	if len(warnings) > 0 {
		return nil, fmt.Errorf("%w: Prometheus at %s answered with warnings: %s", ErrPartial, s.address, withoutLabelSets(strings.Join(warnings, "; ")))
	}
	return v, nil
}

// queryError explains err from querying address. A non-2xx answer is described by its type and
// code only; its body (promv1.Error.Detail) goes to the debug log, never into status. A failed
// request is described by its fixed reason (egress.Summary: no resolved address, port or
// certificate names), its error going to the debug log. Refusals of the egress policy are not
// ErrUnreachable: retrying does not help.
func queryError(ctx context.Context, address string, err error) error {
	address = redacted(address)
	var apiErr *promv1.Error
	if !errors.As(err, &apiErr) {
		log.FromContext(ctx).V(1).Info("Metrics server query failed", "address", address, "error", err.Error())
	}
	if errors.Is(err, egress.ErrRefused) {
		return fmt.Errorf("metrics server %s: %w", hostOf(address), egress.Summary(err))
	}
	if apiErr != nil {
		switch apiErr.Type {
		case promv1.ErrBadData, promv1.ErrExec, promv1.ErrTimeout, promv1.ErrCanceled:
			// Prometheus' own JSON error document (a query it rejected), not a raw body; without
			// the label sets an execution error may quote (duplicate series), which go to the
			// debug log only.
			if msg := withoutLabelSets(apiErr.Msg); apiErr.Type == promv1.ErrExec && msg != apiErr.Msg {
				log.FromContext(ctx).V(1).Info("Prometheus rejected a query", "address", address, "error", apiErr.Msg)
				err = &promv1.Error{Type: apiErr.Type, Msg: msg, Detail: apiErr.Detail}
			}
			return fmt.Errorf("query rejected by Prometheus at %s: %w", address, err)
		}
		if d := strings.TrimSpace(apiErr.Detail); d != "" {
			const maxDetail = 256
			if len(d) > maxDetail {
				d = d[:maxDetail] + "…"
			}
			log.FromContext(ctx).V(1).Info("Metrics server answered with an error", "address", address,
				"error", apiErr.Error(), "body", d)
		}
		return fmt.Errorf("%w: %s: %w", ErrUnreachable, address, &promv1.Error{Type: apiErr.Type, Msg: apiErr.Msg})
	}
	return fmt.Errorf("%w: %s: %w", ErrUnreachable, address, egress.Summary(err))
}

// redacted is address with the password of its user info, if any, replaced by "xxxxx": messages
// name the server, never credentials written into its URL.
func redacted(address string) string {
	if u, err := url.Parse(address); err == nil && u.User != nil {
		return u.Redacted()
	}
	return address
}

// hostOf is the host of an address, for messages that must not repeat a whole URL.
func hostOf(address string) string {
	if u, err := url.Parse(address); err == nil && u.Host != "" {
		return u.Host
	}
	return address
}
