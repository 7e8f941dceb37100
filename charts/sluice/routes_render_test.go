package chart

import (
	"strings"
	"testing"

	"sluice.dev/sluice/tenancy"
	"sluice.dev/sluice/test/helmchart"
)

// routeArgs returns the manager's flags of a rendered chart (name -> value).
func routeArgs(t *testing.T, values map[string]any) map[string]string {
	t.Helper()
	d := render(t, values).Find("Deployment", "sluice")
	if d == nil {
		t.Fatal("no Deployment")
	}
	return managerArgs(t, d)
}

// The route allow-lists are empty by default (a generated route names only its Canary's
// namespace); set, they reach the manager as flags the route policy accepts, and the schema
// refuses entries the manager would refuse.
func TestRoutePolicyValuesWireTheFlags(t *testing.T) {
	args := routeArgs(t, nil)
	for _, flag := range []string{"--allowed-route-hostnames", "--allowed-route-parents"} {
		if v, ok := args[flag]; ok {
			t.Errorf("default args carry %s=%s; want no route allow-list", flag, v)
		}
	}
	if args["--cluster-domain"] != "cluster.local" {
		t.Errorf("--cluster-domain = %q, want cluster.local", args["--cluster-domain"])
	}

	hostnames := []string{"*.example.com", "team-a/shop.example.org"}
	parents := []string{"istio-system/public-gateway", "infra/*"}
	args = routeArgs(t, map[string]any{
		"allowedRouteHostnames": []any{hostnames[0], hostnames[1]},
		"allowedRouteParents":   []any{parents[0], parents[1]},
		"clusterDomain":         "corp.internal",
	})
	for flag, want := range map[string]string{
		"--allowed-route-hostnames": strings.Join(hostnames, ","),
		"--allowed-route-parents":   strings.Join(parents, ","),
		"--cluster-domain":          "corp.internal",
	} {
		if args[flag] != want {
			t.Errorf("%s = %q, want %q", flag, args[flag], want)
		}
	}
	if _, err := tenancy.NewRoutePolicy(hostnames, parents, "corp.internal"); err != nil {
		t.Errorf("the manager refuses the chart's example values: %v", err)
	}

	for name, values := range map[string]map[string]any{
		"hostname with a space":  {"allowedRouteHostnames": []any{"shop example.com"}},
		"wildcard inside a name": {"allowedRouteHostnames": []any{"shop.*.com"}},
		"parent without name":    {"allowedRouteParents": []any{"istio-system"}},
		"parent namespace *":     {"allowedRouteParents": []any{"*/ingress"}},
		"cluster domain":         {"clusterDomain": "cluster..local"},
	} {
		if _, err := helmchart.Render(helmchart.Release{Values: values}); err == nil {
			t.Errorf("%s: values %v accepted", name, values)
		}
	}
}
