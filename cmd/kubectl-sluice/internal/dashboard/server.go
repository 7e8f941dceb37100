package dashboard

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"sluice.dev/sluice/controllers/scheme"
)

// Lever acts on the Canary or DataPlane key (a DataPlane has no namespace) as the plugin's
// command of the same name does, and writes its one-line report to w.
type Lever func(ctx context.Context, c client.Client, w io.Writer, key types.NamespacedName) error

// Options configure a dashboard Server.
type Options struct {
	// Config holds the user's own credentials; every read and write is made with them.
	Config *rest.Config
	// Namespace limits the Canaries shown; empty: every namespace.
	Namespace string
	// Address and Port to listen on; default 127.0.0.1 and 3100 (0 picks a free port).
	Address string
	Port    int
	// ReadOnly hides the levers and refuses their requests.
	ReadOnly bool
	// CanaryLevers and DataPlaneLevers by name (promote, abort, retry, pause, resume, approve).
	CanaryLevers, DataPlaneLevers map[string]Lever
	// Log receives the serving address and warnings; default io.Discard.
	Log io.Writer
}

// Server is a running dashboard: one informer per kind, and an HTTP server that pushes their
// changes to the browser over Server-Sent Events.
type Server struct {
	opts     Options
	client   client.Client
	canaries *watcher
	planes   *watcher
	hub      *hub
	token    string
	listener net.Listener
	hosts    hostPolicy
}

// DefaultPort is the port the dashboard listens on unless told otherwise.
const DefaultPort = 3100

// New builds the clients and informers with the user's credentials and listens; Run serves. On
// a non-loopback address it writes a warning to Log. errors: an address that is not an IP, one
// that cannot be listened on, a config the client refuses.
func New(o Options) (*Server, error) {
	if o.Address == "" {
		o.Address = "127.0.0.1"
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	ip := net.ParseIP(o.Address)
	if ip == nil {
		return nil, fmt.Errorf("--address %q is not an IP address (the dashboard checks the Host header against it)", o.Address)
	}
	cfg := rest.CopyConfig(o.Config)
	cfg.UserAgent = "kubectl-sluice-dashboard"
	c, err := client.NewWithWatch(cfg, client.Options{Scheme: scheme.New()})
	if err != nil {
		return nil, fmt.Errorf("creating the client: %w", err)
	}
	token := make([]byte, 32)
	if _, err := rand.Read(token); err != nil {
		return nil, err
	}
	s := &Server{opts: o, client: c, hub: newHub(), token: hex.EncodeToString(token)}
	if s.canaries, err = newWatcher(c, kindCanary, o.Namespace, s.hub.notify); err != nil {
		return nil, err
	}
	if s.planes, err = newWatcher(c, kindDataPlane, "", s.hub.notify); err != nil {
		return nil, err
	}
	l, err := net.Listen("tcp", net.JoinHostPort(o.Address, strconv.Itoa(o.Port)))
	if err != nil {
		return nil, fmt.Errorf("listening on %s: %w", o.Address, err)
	}
	s.listener = l
	port := l.Addr().(*net.TCPAddr).Port
	s.hosts = newHostPolicy(ip, port)
	if !ip.IsLoopback() {
		fmt.Fprintf(o.Log, "WARNING: the dashboard listens on %s, not on loopback: whoever reaches it acts on the cluster with your credentials (use --read-only to hide the levers)\n", l.Addr())
	}
	return s, nil
}

// URL is the address to open in a browser.
func (s *Server) URL() string {
	host := s.opts.Address
	if ip := net.ParseIP(host); ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, strconv.Itoa(s.listener.Addr().(*net.TCPAddr).Port)) + "/"
}

// Run starts the informers and serves until ctx ends. errors: the server failing.
func (s *Server) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go s.canaries.informer.RunWithContext(ctx)
	go s.planes.informer.RunWithContext(ctx)
	srv := &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 10 * time.Second, BaseContext: func(net.Listener) context.Context { return ctx }}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(s.listener) }()
	fmt.Fprintf(s.opts.Log, "Sluice dashboard on %s (Ctrl-C stops it)\n", s.URL())
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	shutdown, stop := context.WithTimeout(context.Background(), 2*time.Second)
	defer stop()
	if err := srv.Shutdown(shutdown); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return nil
}

// Handler is the dashboard's HTTP handler, behind its Host, Origin and CSRF checks.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", s.serveIndex)
	mux.Handle("GET /assets/", assetHandler())
	mux.HandleFunc("GET /api/overview", s.serveOverview)
	mux.HandleFunc("GET /api/canaries/{namespace}/{name}", s.serveCanary)
	mux.HandleFunc("GET /api/dataplanes/{name}", s.serveDataPlane)
	mux.HandleFunc("GET /api/stream", s.serveStream)
	mux.HandleFunc("POST /api/levers", s.serveLever)
	return s.guard(mux)
}
