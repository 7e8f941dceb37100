package v1alpha1_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/test/testenv"
)

// blueGreen turns the seed Canary into a blue/green run of n iterations.
func blueGreen(c *sluicev1.Canary, n int32) {
	c.Spec.Analysis.StepWeight, c.Spec.Analysis.MaxWeight = 0, 0
	c.Spec.Analysis.Iterations = n
}

func TestFlaggerFieldsAccepted(t *testing.T) {
	testenv.Require(t, env)
	ns := env.Namespace(t)
	cases := map[string]func(*sluicev1.Canary){
		"blue-green kubernetes": func(c *sluicev1.Canary) {
			c.Spec.Provider = sluicev1.ProviderKubernetes
			c.Spec.Mesh = sluicev1.MeshLinkerd
			blueGreen(c, 10)
		},
		"blue-green kubernetes template metrics only": func(c *sluicev1.Canary) {
			c.Spec.Provider = sluicev1.ProviderKubernetes
			blueGreen(c, 3)
			c.Spec.Analysis.Metrics = []sluicev1.CanaryMetric{{Name: "errors", Query: `sum(rate(http_errors_total[1m]))`,
				ThresholdRange: &sluicev1.ThresholdRange{Max: ptr.To(1.0)}}}
		},
		"blue-green mirroring istio": func(c *sluicev1.Canary) {
			c.Spec.Provider = sluicev1.ProviderIstio
			blueGreen(c, 5)
			c.Spec.Analysis.Mirror, c.Spec.Analysis.MirrorWeight = true, 50
		},
		"daemonset blue-green": func(c *sluicev1.Canary) {
			c.Spec.TargetRef.Kind = "DaemonSet"
			blueGreen(c, 5)
		},
		"hpa and service metadata": func(c *sluicev1.Canary) {
			c.Spec.AutoscalerRef = &sluicev1.AutoscalerReference{APIVersion: "autoscaling/v2", Kind: sluicev1.AutoscalerHPA, Name: "web",
				PrimaryScalerReplicas: &sluicev1.ScalerReplicas{MinReplicas: ptr.To[int32](2), MaxReplicas: ptr.To[int32](10)}}
			c.Spec.Service.PortDiscovery, c.Spec.Service.Headless = true, true
			c.Spec.Service.Apex = &sluicev1.ServiceMetadata{Labels: map[string]string{"team": "a"}, Annotations: map[string]string{"x": "y"}}
			c.Spec.Service.Primary = &sluicev1.ServiceMetadata{Labels: map[string]string{"role": "primary"}}
			c.Spec.Service.Canary = &sluicev1.ServiceMetadata{Labels: map[string]string{"role": "canary"}}
		},
		"keda with primary queries": func(c *sluicev1.Canary) {
			c.Spec.AutoscalerRef = &sluicev1.AutoscalerReference{APIVersion: "keda.sh/v1alpha1", Kind: sluicev1.AutoscalerScaledObject, Name: "web",
				PrimaryScalerQueries: map[string]string{"prom": `sum(rate(http_requests_total{app="web-primary"}[1m]))`}}
		},
		"session affinity gatewayapi with rewrite and backend timeout": func(c *sluicev1.Canary) {
			c.Spec.Analysis.SessionAffinity = &sluicev1.SessionAffinity{CookieName: "sluice-canary"}
			c.Spec.Service.Timeout, c.Spec.Service.BackendTimeout = "10s", "5s"
			c.Spec.Service.Rewrite = &sluicev1.HTTPRewrite{URI: "/v2", Authority: "web.internal", Type: sluicev1.RewriteReplacePrefixMatch}
		},
		"istio rewrite retries cors": func(c *sluicev1.Canary) {
			c.Spec.Provider = sluicev1.ProviderIstio
			c.Spec.Service.Rewrite = &sluicev1.HTTPRewrite{URI: "/"}
			c.Spec.Service.Retries = &sluicev1.HTTPRetry{Attempts: 3, PerTryTimeout: "1s"}
			c.Spec.Service.CorsPolicy = &apiextensionsv1.JSON{Raw: []byte(`{"allowMethods":["GET"]}`)}
		},
		"inline query": func(c *sluicev1.Canary) {
			c.Spec.Analysis.Metrics = append(c.Spec.Analysis.Metrics, sluicev1.CanaryMetric{Name: "p95",
				Query:          `histogram_quantile(0.95, sum(rate(http_duration_seconds_bucket[1m])) by (le))`,
				ThresholdRange: &sluicev1.ThresholdRange{Max: ptr.To(0.5)}})
		},
	}
	i := 0
	for name, mutate := range cases {
		i++
		t.Run(name, func(t *testing.T) {
			c := seedCanary()
			c.Namespace, c.Name = ns, fmt.Sprintf("accepted-%d", i)
			mutate(c)
			if err := env.Client.Create(context.Background(), c); err != nil {
				t.Fatalf("valid canary rejected: %v", err)
			}
			got := &sluicev1.Canary{}
			if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(c), got); err != nil {
				t.Fatal(err)
			}
			if a := got.Spec.Analysis.SessionAffinity; a != nil && a.MaxAge != 86400 {
				t.Fatalf("sessionAffinity.maxAge not defaulted to 86400: %d", a.MaxAge)
			}
		})
	}
}

func TestFlaggerFieldsRejectedNamingTheField(t *testing.T) {
	testenv.Require(t, env)
	ns := env.Namespace(t)
	kube := func(c *sluicev1.Canary) {
		c.Spec.Provider, c.Spec.Mesh = sluicev1.ProviderKubernetes, sluicev1.MeshLinkerd
		blueGreen(c, 5)
	}
	cases := []struct {
		name   string
		mutate func(*sluicev1.Canary)
		want   string
	}{
		{"kubernetes provider with weights", func(c *sluicev1.Canary) {
			c.Spec.Provider, c.Spec.Mesh = sluicev1.ProviderKubernetes, sluicev1.MeshLinkerd
		},
			"provider kubernetes runs blue/green only"},
		{"kubernetes provider A/B", func(c *sluicev1.Canary) {
			kube(c)
			c.Spec.Analysis.Match = []sluicev1.HTTPMatchRequest{{Headers: map[string]sluicev1.StringMatch{"x": {Exact: ptr.To("1")}}}}
		}, "provider kubernetes runs blue/green only"},
		{"kubernetes provider with gatewayRefs", func(c *sluicev1.Canary) {
			kube(c)
			c.Spec.Service.GatewayRefs = []gwv1.ParentReference{{Name: "gw"}}
		}, "spec.service.gatewayRefs needs an L7 provider"},
		{"kubernetes provider with a timeout", func(c *sluicev1.Canary) { kube(c); c.Spec.Service.Timeout = "5s" },
			"spec.service.timeout needs an L7 provider"},
		{"kubernetes provider with mirroring", func(c *sluicev1.Canary) { kube(c); c.Spec.Analysis.Mirror = true },
			"analysis.mirror needs an L7 provider"},
		{"kubernetes provider built-in metrics without a mesh", func(c *sluicev1.Canary) { kube(c); c.Spec.Mesh = "" },
			"built-in metrics need spec.mesh"},
		{"blue-green with stepWeight", func(c *sluicev1.Canary) { c.Spec.Analysis.Iterations = 5 },
			"analysis.stepWeight does not apply: analysis.iterations without analysis.match is a blue/green run"},
		{"blue-green with stepWeightPromotion", func(c *sluicev1.Canary) { blueGreen(c, 5); c.Spec.Analysis.StepWeightPromotion = 10 },
			"analysis.stepWeightPromotion does not apply"},
		{"mirror on a weighted run", func(c *sluicev1.Canary) { c.Spec.Analysis.Mirror = true },
			"analysis.mirror applies to blue/green runs"},
		{"mirrorWeight without mirror", func(c *sluicev1.Canary) { blueGreen(c, 5); c.Spec.Analysis.MirrorWeight = 20 },
			"analysis.mirrorWeight needs analysis.mirror: true"},
		{"mirrorWeight above 100", func(c *sluicev1.Canary) {
			blueGreen(c, 5)
			c.Spec.Analysis.Mirror, c.Spec.Analysis.MirrorWeight = true, 101
		}, "spec.analysis.mirrorWeight"},
		{"session affinity on blue-green", func(c *sluicev1.Canary) {
			blueGreen(c, 5)
			c.Spec.Analysis.SessionAffinity = &sluicev1.SessionAffinity{CookieName: "c"}
		}, "analysis.sessionAffinity applies to weighted runs"},
		{"session affinity cookie name with a space", func(c *sluicev1.Canary) {
			c.Spec.Analysis.SessionAffinity = &sluicev1.SessionAffinity{CookieName: "my cookie"}
		}, "spec.analysis.sessionAffinity.cookieName"},
		{"daemonset with weights", func(c *sluicev1.Canary) { c.Spec.TargetRef.Kind = "DaemonSet" },
			"a DaemonSet target runs blue/green"},
		{"daemonset blue/green with a stepWeight", func(c *sluicev1.Canary) {
			c.Spec.TargetRef.Kind = "DaemonSet"
			blueGreen(c, 3)
			c.Spec.Analysis.StepWeight = 10
		}, "analysis.stepWeight"},
		{"daemonset blue/green with stepWeights", func(c *sluicev1.Canary) {
			c.Spec.TargetRef.Kind = "DaemonSet"
			blueGreen(c, 3)
			c.Spec.Analysis.StepWeights = []int32{10, 50}
		}, "analysis.stepWeights"},
		{"daemonset blue/green with a maxWeight", func(c *sluicev1.Canary) {
			c.Spec.TargetRef.Kind = "DaemonSet"
			blueGreen(c, 3)
			c.Spec.Analysis.MaxWeight = 50
		}, "analysis.maxWeight"},
		{"daemonset A/B", func(c *sluicev1.Canary) {
			c.Spec.TargetRef.Kind = "DaemonSet"
			blueGreen(c, 3)
			c.Spec.Analysis.Match = []sluicev1.HTTPMatchRequest{{Headers: map[string]sluicev1.StringMatch{"x-canary": {Exact: ptr.To("1")}}}}
		}, "a DaemonSet target runs blue/green"},
		{"daemonset with an autoscaler", func(c *sluicev1.Canary) {
			c.Spec.TargetRef.Kind = "DaemonSet"
			blueGreen(c, 3)
			c.Spec.AutoscalerRef = &sluicev1.AutoscalerReference{APIVersion: "autoscaling/v2", Kind: sluicev1.AutoscalerHPA, Name: "x"}
		}, "spec.autoscalerRef applies to Deployment targets only"},
		{"hpa with an old apiVersion", func(c *sluicev1.Canary) {
			c.Spec.AutoscalerRef = &sluicev1.AutoscalerReference{APIVersion: "autoscaling/v2beta2", Kind: sluicev1.AutoscalerHPA, Name: "x"}
		}, "spec.autoscalerRef.apiVersion"},
		{"hpa with keda's apiVersion", func(c *sluicev1.Canary) {
			c.Spec.AutoscalerRef = &sluicev1.AutoscalerReference{APIVersion: "keda.sh/v1alpha1", Kind: sluicev1.AutoscalerHPA, Name: "x"}
		}, "autoscalerRef.apiVersion must be autoscaling/v2 for a HorizontalPodAutoscaler"},
		{"primary scaler queries on an hpa", func(c *sluicev1.Canary) {
			c.Spec.AutoscalerRef = &sluicev1.AutoscalerReference{APIVersion: "autoscaling/v2", Kind: sluicev1.AutoscalerHPA, Name: "x",
				PrimaryScalerQueries: map[string]string{"a": "b"}}
		}, "autoscalerRef.primaryScalerQueries applies to a ScaledObject only"},
		{"primary scaler min above max", func(c *sluicev1.Canary) {
			c.Spec.AutoscalerRef = &sluicev1.AutoscalerReference{APIVersion: "autoscaling/v2", Kind: sluicev1.AutoscalerHPA, Name: "x",
				PrimaryScalerReplicas: &sluicev1.ScalerReplicas{MinReplicas: ptr.To[int32](5), MaxReplicas: ptr.To[int32](2)}}
		}, "primaryScalerReplicas.minReplicas must not exceed maxReplicas"},
		{"backendTimeout on istio", func(c *sluicev1.Canary) {
			c.Spec.Provider = sluicev1.ProviderIstio
			c.Spec.Service.BackendTimeout = "5s"
		},
			"spec.service.backendTimeout is a Gateway API field"},
		{"gateways on gatewayapi (the default)", func(c *sluicev1.Canary) { c.Spec.Service.Gateways = []string{"public-gateway"} },
			"spec.service.gateways is an Istio field"},
		{"gateways on gatewayapi", func(c *sluicev1.Canary) {
			c.Spec.Provider = sluicev1.ProviderGatewayAPI
			c.Spec.Service.Gateways = []string{"public-gateway"}
		}, "spec.service.gateways is an Istio field"},
		{"gatewayRefs on istio", func(c *sluicev1.Canary) {
			c.Spec.Provider = sluicev1.ProviderIstio
			c.Spec.Service.GatewayRefs = []gwv1.ParentReference{{Name: "gw"}}
		}, "spec.service.gatewayRefs is a Gateway API field"},
		{"rewrite type on istio", func(c *sluicev1.Canary) {
			c.Spec.Provider = sluicev1.ProviderIstio
			c.Spec.Service.Rewrite = &sluicev1.HTTPRewrite{URI: "/", Type: sluicev1.RewriteReplaceFullPath}
		}, "spec.service.rewrite.type is a Gateway API field"},
		{"empty rewrite", func(c *sluicev1.Canary) { c.Spec.Service.Rewrite = &sluicev1.HTTPRewrite{} },
			"service.rewrite: set uri, authority or both"},
		{"retries on gatewayapi", func(c *sluicev1.Canary) { c.Spec.Service.Retries = &sluicev1.HTTPRetry{Attempts: 2} },
			"spec.service.retries (HTTPRoute retries are experimental-channel only) is rendered by provider istio only"},
		{"trafficPolicy on gatewayapi", func(c *sluicev1.Canary) {
			c.Spec.Service.TrafficPolicy = &apiextensionsv1.JSON{Raw: []byte(`{"tls":{"mode":"ISTIO_MUTUAL"}}`)}
		}, "spec.service.trafficPolicy (a DestinationRule setting) is rendered by provider istio only"},
		{"query and templateRef", func(c *sluicev1.Canary) {
			c.Spec.Analysis.Metrics[0].Query = "up"
			c.Spec.Analysis.Metrics[0].TemplateRef = &sluicev1.CrossNamespaceObjectReference{Name: "t"}
		}, "metric: set templateRef or query, not both"},
		{"query compared to the primary", func(c *sluicev1.Canary) {
			c.Spec.Analysis.Metrics[0].Query = "up"
			c.Spec.Analysis.Metrics[0].CompareToPrimary = &sluicev1.PrimaryComparison{MaxDelta: 1}
		}, "metric.query is run as written"},
	}
	for i, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			c := seedCanary()
			c.Namespace, c.Name = ns, fmt.Sprintf("rejected-%d", i)
			tt.mutate(c)
			err := env.Client.Create(context.Background(), c)
			if err == nil {
				t.Fatal("invalid canary accepted")
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error does not name the field (want %q):\n%v", tt.want, err)
			}
			if strings.Contains(err.Error(), "evaluating rule") || strings.Contains(err.Error(), "no such key") {
				t.Fatalf("error leaks a CEL evaluation failure:\n%v", err)
			}
		})
	}
}

func TestAlertProviderFlaggerTypes(t *testing.T) {
	testenv.Require(t, env)
	ns := env.Namespace(t)
	for _, typ := range []sluicev1.AlertProviderType{sluicev1.AlertProviderRocket, sluicev1.AlertProviderGoogleChat} {
		ap := &sluicev1.AlertProvider{ObjectMeta: metav1.ObjectMeta{Name: string(typ), Namespace: ns},
			Spec: sluicev1.AlertProviderSpec{Type: typ, SecretRef: corev1.LocalObjectReference{Name: "hook"}, Proxy: "http://proxy.corp:3128"}}
		if err := env.Client.Create(context.Background(), ap); err != nil {
			t.Fatalf("%s rejected: %v", typ, err)
		}
	}
	bad := &sluicev1.AlertProvider{ObjectMeta: metav1.ObjectMeta{Name: "bad-proxy", Namespace: ns},
		Spec: sluicev1.AlertProviderSpec{Type: sluicev1.AlertProviderSlack, SecretRef: corev1.LocalObjectReference{Name: "hook"}, Proxy: "proxy.corp:3128"}}
	if err := env.Client.Create(context.Background(), bad); err == nil || !strings.Contains(err.Error(), "spec.proxy") {
		t.Fatalf("proxy without a scheme: %v", err)
	}
}
