package canary

import (
	"context"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/providers"
	"sluice.dev/sluice/providers/gatewayapi"
	"sluice.dev/sluice/providers/istio"
	"sluice.dev/sluice/providers/kubernetes"
	"sluice.dev/sluice/test/testenv"
)

// permanentSentinels are the documented "can never work as it is" errors of each provider, with
// the reason the Canary must stall with.
var permanentSentinels = map[sluicev1.Provider]map[string]struct {
	err    error
	reason string
}{
	sluicev1.ProviderGatewayAPI: {
		"providers.ErrRouteNotFound":  {providers.ErrRouteNotFound, sluicev1.ReasonRouteNotFound},
		"gatewayapi.ErrInvalidSpec":   {gatewayapi.ErrInvalidSpec, sluicev1.ReasonInvalidSpec},
		"gatewayapi.ErrNoApexBackend": {gatewayapi.ErrNoApexBackend, sluicev1.ReasonRouteError},
		"gatewayapi.ErrRouteConflict": {gatewayapi.ErrRouteConflict, sluicev1.ReasonRouteConflict},
	},
	sluicev1.ProviderIstio: {
		"providers.ErrRouteNotFound": {providers.ErrRouteNotFound, sluicev1.ReasonRouteNotFound},
		"istio.ErrInvalidSpec":       {istio.ErrInvalidSpec, sluicev1.ReasonInvalidSpec},
		"istio.ErrNotControlled":     {istio.ErrNotControlled, sluicev1.ReasonRouteConflict},
		"istio.ErrUnsupportedRoute":  {istio.ErrUnsupportedRoute, sluicev1.ReasonRouteError},
		"istio.ErrNoApexRoute":       {istio.ErrNoApexRoute, sluicev1.ReasonRouteError},
	},
}

// notPermanent are the exported errors of the provider packages that do not stall a Canary, and
// why.
var notPermanent = map[string]string{
	"providers.ErrInvalidRoute":   "the contract itself: providers never return it bare",
	"providers.ErrWeightDrift":    "someone edited the weights: the planner puts them back",
	"kubernetes.ErrInvalidSpec":   "permanent, checked in TestKubernetesProviderErrorsArePermanent",
	"kubernetes.ErrSelectorDrift": "someone edited the apex selector: the planner puts it back",
}

// TestKubernetesProviderErrorsArePermanent: the kubernetes provider's spec error stalls like the
// route providers' (its Canaries need a Deployment-only fixture, so it is classified here).
func TestKubernetesProviderErrorsArePermanent(t *testing.T) {
	reason, ok := providers.IsPermanent(fmt.Errorf("wrapped: %w", kubernetes.ErrInvalidSpec))
	if !ok || reason != sluicev1.ReasonInvalidSpec || !errors.Is(kubernetes.ErrInvalidSpec, providers.ErrInvalidRoute) {
		t.Errorf("kubernetes.ErrInvalidSpec: IsPermanent = %q, %v; want %q and ErrInvalidRoute", reason, ok, sluicev1.ReasonInvalidSpec)
	}
}

// TestEveryProviderSentinelIsClassified reads the provider packages' source: every exported error
// variable is either in permanentSentinels (stalls) or in notPermanent, so a new sentinel cannot
// fall through as a transient error unnoticed.
func TestEveryProviderSentinelIsClassified(t *testing.T) {
	known := map[string]bool{}
	for _, sentinels := range permanentSentinels {
		for name, s := range sentinels {
			known[name] = true
			if reason, ok := providers.IsPermanent(fmt.Errorf("wrapped: %w", s.err)); !ok || reason != s.reason {
				t.Errorf("%s: IsPermanent = %q, %v; want %q, true", name, reason, ok, s.reason)
			}
			if !errors.Is(s.err, providers.ErrInvalidRoute) {
				t.Errorf("%s does not match providers.ErrInvalidRoute", name)
			}
		}
	}
	for name := range notPermanent {
		known[name] = true
	}
	root := filepath.Join(testenv.RepoRoot(), "providers")
	for _, dir := range []string{"", "gatewayapi", "istio", "kubernetes"} {
		pkgs, err := parser.ParseDir(token.NewFileSet(), filepath.Join(root, dir), func(fi fs.FileInfo) bool {
			return !strings.HasSuffix(fi.Name(), "_test.go")
		}, 0)
		if err != nil {
			t.Fatal(err)
		}
		for pkgName, pkg := range pkgs {
			for _, f := range pkg.Files {
				for _, name := range exportedErrVars(f) {
					if !known[pkgName+"."+name] {
						t.Errorf("%s.%s is neither a classified permanent sentinel nor listed as not permanent", pkgName, name)
					}
				}
			}
		}
	}
}

func exportedErrVars(f *ast.File) []string {
	var out []string
	for _, decl := range f.Decls {
		g, ok := decl.(*ast.GenDecl)
		if !ok || g.Tok != token.VAR {
			continue
		}
		for _, spec := range g.Specs {
			for _, n := range spec.(*ast.ValueSpec).Names {
				if strings.HasPrefix(n.Name, "Err") {
					out = append(out, n.Name)
				}
			}
		}
	}
	return out
}

// failingRouter is the provider's real router whose Reconcile fails with err, as the provider
// does when it meets a route or spec it cannot handle.
type failingRouter struct {
	providers.Router
	err error
}

func (f failingRouter) Reconcile(context.Context, *sluicev1.Canary) error { return f.err }

// TestPermanentRouteErrorsStall: on each provider, every permanent sentinel, wrapped as the
// provider wraps it, stalls the Canary with the sentinel's reason and message (Ready=False, one
// warning event), instead of a retry with backoff.
func TestPermanentRouteErrorsStall(t *testing.T) {
	for _, provider := range []sluicev1.Provider{sluicev1.ProviderGatewayAPI, sluicev1.ProviderIstio} {
		t.Run(string(provider), func(t *testing.T) {
			names := make([]string, 0, len(permanentSentinels[provider]))
			for name := range permanentSentinels[provider] {
				names = append(names, name)
			}
			slices.Sort(names)
			for _, name := range names {
				s := permanentSentinels[provider][name]
				t.Run(name, func(t *testing.T) {
					h := newHarnessFor(t, provider)
					h.r.Routers[provider] = failingRouter{Router: h.r.Routers[provider],
						err: fmt.Errorf("%w: route %s/podinfo", s.err, h.ns)}
					h.app(1, "1")
					h.create(h.canaryFor())
					tickUntilStalled(h)
					assertStalled(t, h, s.reason, s.err.Error())
				})
			}
		})
	}
}

// tickUntilStalled ticks until the Canary is Stalled (the route is reconciled only once the
// primary is ready, so the stall comes after a few ticks), then once more: the same stall again
// must not record a second event.
func tickUntilStalled(h *harness) {
	h.t.Helper()
	for i := 0; i < 6; i++ {
		h.tick()
		if c := findCondition(h.canary(), sluicev1.ConditionStalled); c != nil && c.Status == metav1.ConditionTrue {
			break
		}
	}
	h.tick()
}

// assertStalled checks Stalled and Ready carry reason and a message containing msg, and that the
// stall was recorded as one warning event.
func assertStalled(t *testing.T, h *harness, reason, msg string) {
	t.Helper()
	c := h.canary()
	for _, typ := range []string{sluicev1.ConditionStalled, sluicev1.ConditionReady} {
		cond := findCondition(c, typ)
		want := metav1.ConditionTrue
		if typ == sluicev1.ConditionReady {
			want = metav1.ConditionFalse
		}
		if cond == nil || cond.Status != want || cond.Reason != reason || !strings.Contains(cond.Message, msg) {
			t.Fatalf("%s = %+v; want %s with reason %s naming %q\n%s", typ, cond, want, reason, msg, strings.Join(h.log, "\n"))
		}
	}
	n := 0
	for _, line := range h.log {
		n += strings.Count(line, "["+reason+"]")
	}
	if n != 1 {
		t.Fatalf("%d %s events, want 1\n%s", n, reason, strings.Join(h.log, "\n"))
	}
}

// TestRealRouteErrorsStall: the real providers meeting routes they cannot handle stall the
// Canary: a routeRef to a missing route (both providers), a VirtualService without a route to
// the apex (Istio, formerly retried forever), a generated route's name taken by someone else's
// object (both providers).
func TestRealRouteErrorsStall(t *testing.T) {
	tests := []struct {
		name     string
		provider sluicev1.Provider
		yaml     string
		routeRef *sluicev1.RouteReference
		reason   string
		msg      string
	}{
		{name: "gatewayapi routeRef missing", provider: sluicev1.ProviderGatewayAPI,
			routeRef: &sluicev1.RouteReference{APIVersion: "gateway.networking.k8s.io/v1", Kind: "HTTPRoute", Name: "absent"},
			reason:   sluicev1.ReasonRouteNotFound, msg: "absent"},
		{name: "istio routeRef missing", provider: sluicev1.ProviderIstio,
			routeRef: &sluicev1.RouteReference{APIVersion: "networking.istio.io/v1", Kind: "VirtualService", Name: "absent"},
			reason:   sluicev1.ReasonRouteNotFound, msg: "absent"},
		{name: "istio no route to the apex", provider: sluicev1.ProviderIstio, yaml: otherHostVirtualService,
			routeRef: &sluicev1.RouteReference{APIVersion: "networking.istio.io/v1", Kind: "VirtualService", Name: "elsewhere"},
			reason:   sluicev1.ReasonRouteError, msg: istio.ErrNoApexRoute.Error()},
		{name: "gatewayapi generated name taken", provider: sluicev1.ProviderGatewayAPI, yaml: foreignHTTPRoute,
			reason: sluicev1.ReasonRouteConflict, msg: gatewayapi.ErrRouteConflict.Error()},
		{name: "istio generated name taken", provider: sluicev1.ProviderIstio, yaml: foreignVirtualService,
			reason: sluicev1.ReasonRouteConflict, msg: istio.ErrNotControlled.Error()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarnessFor(t, tt.provider)
			h.app(1, "1")
			if tt.yaml != "" {
				h.applyYAML(tt.yaml)
			}
			c := h.canaryFor()
			c.Spec.Service.RouteRef = tt.routeRef
			h.create(c)
			tickUntilStalled(h)
			assertStalled(t, h, tt.reason, tt.msg)
		})
	}
}

// otherHostVirtualService routes only to a Service that is not the Canary's.
const otherHostVirtualService = `
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata:
  name: elsewhere
spec:
  hosts: [elsewhere]
  http:
  - route:
    - destination:
        host: elsewhere
`

// foreignHTTPRoute and foreignVirtualService take the name of the route Sluice would generate.
const foreignHTTPRoute = `
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata:
  name: podinfo
spec:
  rules:
  - backendRefs:
    - name: somebody-else
      port: 80
`

const foreignVirtualService = `
apiVersion: networking.istio.io/v1
kind: VirtualService
metadata:
  name: podinfo
spec:
  hosts: [podinfo]
  http:
  - route:
    - destination:
        host: somebody-else
`
