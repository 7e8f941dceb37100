package istio

import (
	"context"
	"os"
	"testing"

	"google.golang.org/protobuf/proto"
	istionetv1 "istio.io/client-go/pkg/apis/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/providers"
	"sluice.dev/sluice/test/testenv"
)

// env is the shared control plane; nil under -short.
var env *testenv.Env

func TestMain(m *testing.M) { os.Exit(testenv.Run(m, &env)) }

// newCanary creates a Canary named user-service (so the apex service is user-service) in ns with
// provider istio, port 8080, after mutate.
func newCanary(t *testing.T, ns string, mutate func(*sluicev1.Canary)) *sluicev1.Canary {
	t.Helper()
	c := &sluicev1.Canary{
		ObjectMeta: metav1.ObjectMeta{Name: "user-service", Namespace: ns},
		Spec: sluicev1.CanarySpec{
			TargetRef: sluicev1.TargetReference{Kind: "Deployment", Name: "user-service"},
			Provider:  sluicev1.ProviderIstio,
			Service:   sluicev1.CanaryService{Port: 8080},
			Analysis:  sluicev1.CanaryAnalysis{Interval: "1m", StepWeight: 10, MaxWeight: 50},
		},
	}
	if mutate != nil {
		mutate(c)
	}
	if err := env.Client.Create(t.Context(), c); err != nil {
		t.Fatalf("creating Canary: %v", err)
	}
	return c
}

// fromYAML decodes a manifest into obj (Istio specs through their own JSON shim) in namespace ns.
func fromYAML(t *testing.T, manifest, ns string, obj client.Object) {
	t.Helper()
	if err := yaml.Unmarshal([]byte(manifest), obj); err != nil {
		t.Fatalf("decoding manifest: %v", err)
	}
	obj.SetNamespace(ns)
}

func getVS(t *testing.T, ns, name string) *istionetv1.VirtualService {
	t.Helper()
	vs := &istionetv1.VirtualService{}
	if err := env.Client.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, vs); err != nil {
		t.Fatalf("reading VirtualService %s/%s: %v", ns, name, err)
	}
	return vs
}

func getDR(t *testing.T, ns, name string) *istionetv1.DestinationRule {
	t.Helper()
	dr := &istionetv1.DestinationRule{}
	if err := env.Client.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, dr); err != nil {
		t.Fatalf("reading DestinationRule %s/%s: %v", ns, name, err)
	}
	return dr
}

// mustWeights asserts GetRoutes returns want.
func mustWeights(t *testing.T, r *Router, canary *sluicev1.Canary, want providers.Weights) {
	t.Helper()
	got, err := r.GetRoutes(t.Context(), canary)
	if err != nil {
		t.Fatalf("GetRoutes: %v", err)
	}
	if got != want {
		t.Fatalf("GetRoutes = %+v, want %+v", got, want)
	}
}

func protoDiff(t *testing.T, what string, got, want proto.Message) {
	t.Helper()
	if !proto.Equal(got, want) {
		t.Errorf("%s changed:\ngot  %v\nwant %v", what, got, want)
	}
}
