package convert_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"sluice.dev/sluice/cmd/kubectl-sluice/internal/convert"
	"sluice.dev/sluice/test/testenv"
)

// TestConvertOutputAcceptedByAPIServer sends every object convert writes for the corpus to a real
// apiserver as a server-side dry run (admission, schema and CEL validation, no storage): the
// output applies as it is.
func TestConvertOutputAcceptedByAPIServer(t *testing.T) {
	testenv.Require(t, env)
	ns := env.Namespace(t)
	total := 0
	for _, f := range corpus(t) {
		in, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		res, err := convert.Convert(bytes.NewReader(in))
		if err != nil {
			t.Fatal(err)
		}
		for _, obj := range res.Objects {
			obj.SetNamespace(ns) // the corpus' namespaces need not exist
			if err := env.Client.Create(context.Background(), obj, client.DryRunAll); err != nil {
				t.Errorf("%s: %s %s rejected: %v", filepath.Base(f), obj.GetObjectKind().GroupVersionKind().Kind, obj.GetName(), err)
			}
			total++
		}
	}
	if total < 15 {
		t.Fatalf("only %d objects converted from the corpus", total)
	}
}

// TestReportListsEveryDroppedField converts a Canary that sets fields Sluice cannot carry over,
// including ones outside Flagger's schema, and checks that the report names exactly those.
func TestReportListsEveryDroppedField(t *testing.T) {
	const in = `
apiVersion: flagger.app/v1beta1
kind: Canary
metadata: {name: all, namespace: x}
spec:
  provider: istio
  targetRef: {apiVersion: apps/v1, kind: Deployment, name: all, namespace: other}
  ingressRef: {apiVersion: networking.k8s.io/v1, kind: Ingress, name: all}
  upstreamRef: {apiVersion: gloo.solo.io/v1, kind: Upstream, name: all}
  routeRef: {apiVersion: apisix.apache.org/v2, kind: ApisixRoute, name: all}
  service:
    port: 80
    trafficDistribution: PreferClose
    meshName: m
    backends: [b]
    delegation: true
    mirror: [{backendRef: {name: other, port: 80}}]
    unmanagedMetadata: {labels: [a]}
    backendTimeout: 5s
    rewrite: {uri: /, type: ReplaceFullPath}
    gatewayRefs: [{name: gw}]
    match:
    - authority: {exact: a.example.com}
      scheme: {exact: https}
      port: 8080
      gateways: [mesh]
      sourceNamespace: other
      uri: {prefix: /}
    unknownServiceField: 1
  analysis:
    interval: 1m
    threshold: 3
    iterations: 2
    stepWeights: [10, 20]
    sessionAffinity: {cookieName: c}
    mirrorWeight: 10
    metrics:
    - name: x
      templateRef: {name: t}
      query: up
    webhooks:
    - {name: w, url: "http://w/", disableTLS: true, unknownHookField: true}
  unknownSpecField: {a: 1}
`
	res, err := convert.Convert(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	var dropped []string
	for _, o := range res.Report.Objects {
		for _, f := range o.Findings {
			if f.Severity == convert.Dropped {
				dropped = append(dropped, f.Field)
			}
		}
	}
	slices.Sort(dropped)
	want := []string{
		"spec.analysis.metrics[0]", // no thresholdRange: Flagger only records it
		"spec.analysis.metrics[0].query",
		"spec.analysis.mirrorWeight",
		"spec.analysis.sessionAffinity",
		"spec.analysis.stepWeights",
		"spec.analysis.webhooks[0].disableTLS",
		"spec.analysis.webhooks[0].unknownHookField",
		"spec.ingressRef",
		"spec.routeRef",
		"spec.service.backendTimeout",
		"spec.service.backends",
		"spec.service.delegation",
		"spec.service.gatewayRefs",
		"spec.service.match[0].authority.exact",
		"spec.service.match[0].gateways[0]",
		"spec.service.match[0].port",
		"spec.service.match[0].scheme.exact",
		"spec.service.match[0].sourceNamespace",
		"spec.service.meshName",
		"spec.service.mirror",
		"spec.service.rewrite.type",
		"spec.service.trafficDistribution",
		"spec.service.unknownServiceField",
		"spec.service.unmanagedMetadata",
		"spec.targetRef.namespace",
		"spec.unknownSpecField",
		"spec.upstreamRef",
	}
	if strings.Join(dropped, "\n") != strings.Join(want, "\n") {
		t.Fatalf("dropped fields:\n%s\nwant:\n%s", strings.Join(dropped, "\n"), strings.Join(want, "\n"))
	}
}
