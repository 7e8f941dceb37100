package manager_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/controllers/manager"
	"sluice.dev/sluice/test/testenv"
)

// TestSecretContentsNotCached runs the manager in a namespace with 40 Secrets no target
// references (each 4 KiB, half of them with kubectl's last-applied annotation repeating the data)
// and one Deployment that references a Secret and a ConfigMap. Every request the manager makes is
// recorded:
//   - Secrets and ConfigMaps are only ever listed and watched as metadata;
//   - the only Secret and ConfigMap contents ever read are the referenced ones and their -primary
//     copies;
//   - the cache holds their metadata without annotations;
//   - an idle Canary reads no Secret again, and a change of the referenced Secret starts a run.
func TestSecretContentsNotCached(t *testing.T) {
	testenv.Require(t, env)
	ns := env.Namespace(t)
	big := strings.Repeat("x", 4096)
	for i := range 40 {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("unrelated-%02d", i), Namespace: ns},
			StringData: map[string]string{"password": big}}
		if i%2 == 0 {
			s.Annotations = map[string]string{"kubectl.kubernetes.io/last-applied-configuration": `{"stringData":{"password":"` + big + `"}}`}
		}
		create(t, s)
	}
	create(t,
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "web-secret", Namespace: ns}, StringData: map[string]string{"key": "v1"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "web-config", Namespace: ns}, Data: map[string]string{"mode": "a"}})
	app(t, ns, "web", func(p *corev1.PodSpec) {
		p.Containers[0].EnvFrom = []corev1.EnvFromSource{
			{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "web-secret"}}},
			{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "web-config"}}},
		}
	})
	create(t, canaryFor(ns, "web"))

	log := &requestLog{}
	cfg := rest.CopyConfig(env.Config)
	cfg.Wrap(log.wrap)
	mgr := startManager(t, cfg, manager.Options{Namespaces: []string{ns}})
	waitCanary(t, ns, "web", 30*time.Second, "Initialized", func(c *sluicev1.Canary) bool {
		return c.Status.Phase == sluicev1.CanaryPhaseInitialized
	})

	// What the cache holds of Secrets: metadata only, no annotations.
	metas := &metav1.PartialObjectMetadataList{}
	metas.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("SecretList"))
	if err := mgr.GetCache().List(context.Background(), metas, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	cachedBytes, fullBytes := 0, 0
	for i := range metas.Items {
		m := &metas.Items[i]
		if len(m.Annotations) > 0 || len(m.ManagedFields) > 0 {
			t.Fatalf("cached metadata of Secret %s keeps annotations or managed fields: %v", m.Name, m.Annotations)
		}
		b, _ := json.Marshal(m)
		cachedBytes += len(b)
		full := &corev1.Secret{}
		if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: m.Name}, full); err == nil {
			b, _ = json.Marshal(full)
			fullBytes += len(b)
		}
	}
	t.Logf("cache: metadata of %d Secrets, %d bytes as JSON; the same Secrets in full: %d bytes", len(metas.Items), cachedBytes, fullBytes)

	idleFrom := log.count(func(r request) bool { return r.resource == "secrets" && r.name != "" })
	time.Sleep(3 * time.Second) // three intervals of an idle Canary
	if n := log.count(func(r request) bool { return r.resource == "secrets" && r.name != "" }) - idleFrom; n != 0 {
		t.Errorf("an idle Canary read Secrets %d times in 3 s, want 0", n)
	}

	before := waitCanary(t, ns, "web", time.Second, "readable", func(*sluicev1.Canary) bool { return true }).Status.LastAppliedSpec
	s := &corev1.Secret{}
	if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "web-secret"}, s); err != nil {
		t.Fatal(err)
	}
	s.Data["key"] = []byte("v2")
	if err := env.Client.Update(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	waitCanary(t, ns, "web", 30*time.Second, "a run for the changed Secret", func(c *sluicev1.Canary) bool {
		return c.Status.LastAppliedSpec != before && c.Status.Phase == sluicev1.CanaryPhaseSucceeded
	})

	// The referenced configs, their -primary copies and the copies' restore points (kept by a
	// promotion that changes a copy, for a rollback): every other Secret's contents stay unread.
	readable := map[string][]string{
		"secrets":    {"web-secret", "web-secret-primary", "web-secret-primary-restore"},
		"configmaps": {"web-config", "web-config-primary", "web-config-primary-restore"},
	}
	for _, r := range log.all() {
		allowed, sensitive := readable[r.resource]
		switch {
		case !sensitive:
		case r.name == "" && (r.method == http.MethodGet) && !strings.Contains(r.accept, "as=PartialObjectMetadata"):
			t.Errorf("%s %s lists or watches %s with their contents (Accept %q)", r.method, r.path, r.resource, r.accept)
		case r.name != "" && !slices.Contains(allowed, r.name):
			t.Errorf("%s %s reads %s %s, which no target references", r.method, r.path, r.resource, r.name)
		}
	}
	if n := log.count(func(r request) bool {
		return r.resource == "secrets" && r.name == "" && strings.Contains(r.accept, "as=PartialObjectMetadata")
	}); n == 0 {
		t.Error("no metadata-only list or watch of Secrets recorded: the request log misses the informer's requests")
	}
	reads := log.count(func(r request) bool { return r.resource == "secrets" && r.name != "" && r.method == http.MethodGet })
	t.Logf("Secret contents read from the apiserver: %d times (referenced Secret, its copy and the copy's restore point only)", reads)
}

// requestLog records the manager's requests to the apiserver.
type requestLog struct {
	mu       sync.Mutex
	requests []request
}

type request struct {
	method, path, accept string
	resource, name       string // for /api/v1/namespaces/NS/RESOURCE[/NAME]
	watch                bool   // ?watch=true
}

func (l *requestLog) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripper(func(r *http.Request) (*http.Response, error) {
		req := request{method: r.Method, path: r.URL.Path, accept: r.Header.Get("Accept"), watch: r.URL.Query().Get("watch") == "true"}
		if parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/"); len(parts) >= 5 && parts[0] == "api" && parts[2] == "namespaces" {
			req.resource = parts[4]
			if len(parts) >= 6 {
				req.name = path.Base(r.URL.Path)
			}
		} else if len(parts) == 3 && parts[0] == "api" {
			req.resource = parts[2] // cluster-wide list or watch
		}
		l.mu.Lock()
		l.requests = append(l.requests, req)
		l.mu.Unlock()
		return rt.RoundTrip(r)
	})
}

func (l *requestLog) all() []request {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]request(nil), l.requests...)
}

func (l *requestLog) count(match func(request) bool) int {
	n := 0
	for _, r := range l.all() {
		if match(r) {
			n++
		}
	}
	return n
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
