package manager_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/controllers/manager"
	"sluice.dev/sluice/test/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) { os.Exit(testenv.Run(m, &env)) }

// startManager runs manager.New on cfg (env.Config when nil) with o (metrics and probes off,
// no leader election unless o says so) until the test ends, and plays the Deployment controller
// in the namespaces it watches.
func startManager(t *testing.T, cfg *rest.Config, o manager.Options) ctrl.Manager {
	t.Helper()
	mgr, stop := runManager(t, cfg, o)
	t.Cleanup(stop)
	return mgr
}

// startManagerUntil is startManager on env.Config, returning the function that stops it.
func startManagerUntil(t *testing.T, o manager.Options) (stop func()) {
	t.Helper()
	_, stop = runManager(t, nil, o)
	return stop
}

func runManager(t *testing.T, cfg *rest.Config, o manager.Options) (ctrl.Manager, func()) {
	t.Helper()
	if cfg == nil {
		cfg = env.Config
	}
	if o.MetricsAddr == "" {
		o.MetricsAddr = "0"
	}
	o.ProbeAddr, o.SkipNameValidation = "0", true
	ctx, cancel := context.WithCancel(context.Background())
	mgr, err := manager.New(ctx, cfg, o)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	var wg sync.WaitGroup
	for _, ns := range o.Namespaces {
		wg.Go(func() { testenv.PlayDeploymentController(ctx, env.Client, ns) })
	}
	var once sync.Once
	return mgr, func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("manager: %v", err)
			}
			wg.Wait()
		})
	}
}

// app creates Deployment name in ns (one replica, image app:1) with the given pod spec changes.
func app(t *testing.T, ns, name string, mutate func(*corev1.PodSpec)) *appsv1.Deployment {
	t.Helper()
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "app:1"}}}}},
	}
	if mutate != nil {
		mutate(&d.Spec.Template.Spec)
	}
	create(t, d)
	return d
}

// canaryFor is a Canary of Deployment name with a 1s interval, no metrics and no webhooks.
func canaryFor(ns, name string) *sluicev1.Canary {
	return &sluicev1.Canary{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: sluicev1.CanarySpec{
			TargetRef:        sluicev1.TargetReference{APIVersion: "apps/v1", Kind: "Deployment", Name: name},
			Service:          sluicev1.CanaryService{Port: 9898},
			RevertOnDeletion: true,
			Analysis:         sluicev1.CanaryAnalysis{Interval: "1s", Threshold: 2, MaxWeight: 50, StepWeight: 25, AdvanceWithoutData: true},
		},
	}
}

func create(t *testing.T, objs ...client.Object) {
	t.Helper()
	for _, o := range objs {
		if err := env.Client.Create(context.Background(), o); err != nil {
			t.Fatalf("creating %T %s: %v", o, o.GetName(), err)
		}
	}
}

// setImage changes Deployment ns/name's image, starting a new revision.
func setImage(t *testing.T, ns, name, image string) {
	t.Helper()
	d := &appsv1.Deployment{}
	if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, d); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(d.DeepCopy())
	d.Spec.Template.Spec.Containers[0].Image = image
	if err := env.Client.Patch(context.Background(), d, patch); err != nil {
		t.Fatal(err)
	}
}

// waitCanary polls Canary ns/name until cond holds, failing after timeout with its status.
func waitCanary(t *testing.T, ns, name string, timeout time.Duration, what string, cond func(*sluicev1.Canary) bool) *sluicev1.Canary {
	t.Helper()
	deadline := time.Now().Add(timeout)
	c := &sluicev1.Canary{}
	for time.Now().Before(deadline) {
		if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, c); err == nil && cond(c) {
			return c
		}
		time.Sleep(100 * time.Millisecond)
	}
	st, _ := json.MarshalIndent(c.Status, "", "  ")
	t.Fatalf("canary %s/%s: timed out after %s waiting for %s; status:\n%s", ns, name, timeout, what, st)
	return nil
}

// stalledWith reports whether c is Stalled with reason, the message containing every fragment.
func stalledWith(reason string, fragments ...string) func(*sluicev1.Canary) bool {
	return func(c *sluicev1.Canary) bool {
		cond := meta.FindStatusCondition(c.Status.Conditions, sluicev1.ConditionStalled)
		if cond == nil || cond.Status != metav1.ConditionTrue || cond.Reason != reason {
			return false
		}
		for _, f := range fragments {
			if !strings.Contains(cond.Message, f) {
				return false
			}
		}
		return true
	}
}

// eventNotes returns the notes of the events about Canary ns/name.
func eventNotes(t *testing.T, ns, name string) []string {
	t.Helper()
	list := &eventsv1.EventList{}
	if err := env.Client.List(context.Background(), list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	var notes []string
	for _, e := range list.Items {
		if e.Regarding.Kind == "Canary" && e.Regarding.Name == name {
			notes = append(notes, e.Reason+": "+e.Note)
		}
	}
	return notes
}

// recorder is a local HTTP receiver on 127.0.0.1 that records each request's path and
// Authorization header, then answers with handler (200 when nil).
type recorder struct {
	*httptest.Server
	mu       sync.Mutex
	requests []recorded
}

type recorded struct{ path, authorization string }

func newRecorder(t *testing.T, handler http.Handler) *recorder {
	t.Helper()
	r := &recorder{}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.mu.Lock()
		r.requests = append(r.requests, recorded{path: req.URL.Path, authorization: req.Header.Get("Authorization")})
		r.mu.Unlock()
		if handler != nil {
			handler.ServeHTTP(w, req)
		}
	}))
	t.Cleanup(func() { r.CloseClientConnections(); r.Close() })
	return r
}

func (r *recorder) recorded() []recorded {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]recorded(nil), r.requests...)
}
