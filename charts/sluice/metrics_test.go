package chart

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"sluice.dev/sluice/controllers/manager"
	"sluice.dev/sluice/test/helmchart"
)

// TestMetricsNeedAuthorization runs the manager as the chart's ServiceAccount (with the chart's
// RBAC, its metrics-auth rights included) serving /metrics over HTTPS: an anonymous request gets
// 401, a ServiceAccount without the chart's metrics-reader role 403, one bound to it the metrics.
func TestMetricsNeedAuthorization(t *testing.T) {
	if env == nil {
		t.Skip("needs envtest")
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	release := env.Namespace(t)
	out, err := helmchart.Render(helmchart.Release{Name: "sluice", Namespace: release, Values: map[string]any{
		"metrics": map[string]any{"readers": []any{map[string]any{"name": "prometheus", "namespace": release}}}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, kind := range []string{"ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"} {
		for _, o := range out.OfKind(kind) {
			o = o.DeepCopy()
			if err := env.Client.Create(ctx, o); err != nil {
				t.Fatalf("installing %s %s: %v", kind, o.GetName(), err)
			}
			if kind == "ClusterRole" || kind == "ClusterRoleBinding" {
				t.Cleanup(func() { _ = env.Client.Delete(context.Background(), o) })
			}
		}
	}
	for _, name := range []string{"prometheus", "nosy"} {
		if err := env.Client.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: release}}); err != nil {
			t.Fatal(err)
		}
	}
	if out.Find("ClusterRoleBinding", "sluice-metrics-reader") == nil {
		t.Fatal("metrics.readers rendered no ClusterRoleBinding to the metrics-reader role")
	}

	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: fmt.Sprintf("system:serviceaccount:%s:sluice", release)}
	mgr, err := manager.New(ctx, cfg, manager.Options{MetricsAddr: addr, ProbeAddr: "0", SkipNameValidation: true,
		Namespaces: []string{release}, DisableDataPlane: true, MetricsCertDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	defer func() { cancel(); <-done }()

	cs := kubernetes.NewForConfigOrDie(env.Config)
	token := func(sa string) string {
		tr, err := cs.CoreV1().ServiceAccounts(release).CreateToken(ctx, sa, &authenticationv1.TokenRequest{
			Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptrInt64(600)}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("token for %s: %v", sa, err)
		}
		return tr.Status.Token
	}
	// The server's certificate is self-signed: this client checks authentication, not the chain.
	hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // self-signed test certificate
	get := func(bearer string) (int, string) {
		deadline := time.Now().Add(30 * time.Second)
		for {
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+addr+"/metrics", nil)
			if bearer != "" {
				req.Header.Set("Authorization", "Bearer "+bearer)
			}
			resp, err := hc.Do(req)
			if err == nil {
				body, _ := io.ReadAll(resp.Body)
				_ = resp.Body.Close()
				return resp.StatusCode, string(body)
			}
			if time.Now().After(deadline) {
				t.Fatalf("GET /metrics: %v", err)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	if code, _ := get(""); code != http.StatusUnauthorized {
		t.Errorf("anonymous GET /metrics = %d, want 401", code)
	}
	if code, _ := get(token("nosy")); code != http.StatusForbidden {
		t.Errorf("GET /metrics as a ServiceAccount without the metrics-reader role = %d, want 403", code)
	}
	code, body := get(token("prometheus"))
	if code != http.StatusOK || !strings.Contains(body, "controller_runtime_") {
		t.Errorf("GET /metrics as the metrics reader = %d, want 200 with the manager's metrics; body starts %.200q", code, body)
	}
}

func ptrInt64(v int64) *int64 { return &v }
