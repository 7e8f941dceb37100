package metrictemplate

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/test/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) { os.Exit(testenv.Run(m, &env)) }

// TestQueryCheckedWhenApplied runs the controller in a manager against a real apiserver: a
// template whose query Prometheus's parser rejects is reported on the template within seconds of
// being applied, and fixing it turns the condition True.
func TestQueryCheckedWhenApplied(t *testing.T) {
	testenv.Require(t, env)
	ns := env.Namespace(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	mgr, err := ctrl.NewManager(env.Config, ctrl.Options{Scheme: env.Scheme, Metrics: metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0"})
	if err != nil {
		t.Fatal(err)
	}
	if err := (&Reconciler{Client: mgr.GetClient()}).SetupWithManager(mgr); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	defer func() { cancel(); <-done }()

	mt := &sluicev1.MetricTemplate{ObjectMeta: metav1.ObjectMeta{Name: "errors", Namespace: ns},
		Spec: sluicev1.MetricTemplateSpec{Query: `sum(rate(http_requests_total{namespace="{{ .namespace }}",status=~"5.."}[{{ .interval }}])`}}
	if err := env.Client.Create(ctx, mt); err != nil {
		t.Fatal(err)
	}
	cond := waitReady(t, mt, metav1.ConditionFalse)
	if cond.Reason != sluicev1.ReasonInvalidQuery || !strings.Contains(cond.Message, "unclosed left parenthesis") {
		t.Fatalf("condition %+v; want InvalidQuery with the parser's message", cond)
	}

	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(mt), mt); err != nil {
		t.Fatal(err)
	}
	mt.Spec.Query += ")"
	if err := env.Client.Update(ctx, mt); err != nil {
		t.Fatal(err)
	}
	if cond := waitReady(t, mt, metav1.ConditionTrue); cond.Reason != sluicev1.ReasonValidQuery || cond.ObservedGeneration != 2 {
		t.Fatalf("condition %+v after the fix", cond)
	}
}

func waitReady(t *testing.T, mt *sluicev1.MetricTemplate, want metav1.ConditionStatus) *metav1.Condition {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		got := &sluicev1.MetricTemplate{}
		if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(mt), got); err != nil {
			t.Fatal(err)
		}
		if c := apimeta.FindStatusCondition(got.Status.Conditions, sluicev1.ConditionReady); c != nil && c.Status == want &&
			c.ObservedGeneration == got.Generation {
			return c
		}
		if time.Now().After(deadline) {
			t.Fatalf("Ready never %s: %+v", want, got.Status)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestUnjudgeableQueriesMarkedInvalid runs the controller against a real apiserver: a query
// Prometheus's parser types as a range vector or a string can never be judged (InvalidQuery
// naming the type); a template that needs {{ .variables.NAME }} is valid and says which
// templateVariables every Canary must set.
func TestUnjudgeableQueriesMarkedInvalid(t *testing.T) {
	testenv.Require(t, env)
	ns := env.Namespace(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	mgr, err := ctrl.NewManager(env.Config, ctrl.Options{Scheme: env.Scheme, Metrics: metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0", Controller: config.Controller{SkipNameValidation: ptr.To(true)}})
	if err != nil {
		t.Fatal(err)
	}
	if err := (&Reconciler{Client: mgr.GetClient()}).SetupWithManager(mgr); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	defer func() { cancel(); <-done }()

	for _, tc := range []struct {
		name, query string
		want        metav1.ConditionStatus
		text        string
	}{
		{"range", `http_requests_total{namespace="{{ .namespace }}"}[5m]`, metav1.ConditionFalse, "returns a range vector"},
		{"string", `"up"`, metav1.ConditionFalse, "returns a string"},
		{"vars", `sum(up{job="{{ .variables.job }}",team="{{ .variables.team }}"})`, metav1.ConditionTrue,
			"every Canary using it must set templateVariables job, team"},
	} {
		mt := &sluicev1.MetricTemplate{ObjectMeta: metav1.ObjectMeta{Name: tc.name, Namespace: ns},
			Spec: sluicev1.MetricTemplateSpec{Query: tc.query}}
		if err := env.Client.Create(ctx, mt); err != nil {
			t.Fatal(err)
		}
		cond := waitReady(t, mt, tc.want)
		wantReason := sluicev1.ReasonValidQuery
		if tc.want == metav1.ConditionFalse {
			wantReason = sluicev1.ReasonInvalidQuery
		}
		if cond.Reason != wantReason || !strings.Contains(cond.Message, tc.text) {
			t.Errorf("%s: condition %+v; want %s mentioning %q", tc.name, cond, wantReason, tc.text)
		}
	}
}

// TestHostileTemplatePastAdmissionIsInvalidQuery writes the templates that would render ~640 MB
// or spin forever as an older CRD without the query rule admitted them, then upgrades the CRD and
// starts the controller, against a real apiserver: each gets Ready=False InvalidQuery naming the
// refused action within seconds (the status write passes the new rule: the query is unchanged),
// and the process allocates nothing near what rendering them would.
func TestHostileTemplatePastAdmissionIsInvalidQuery(t *testing.T) {
	testenv.Require(t, env)
	ns := env.Namespace(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	restore := env.ChangeCRD(t, "metrictemplates.sluice.dev", func(crd *apiextensionsv1.CustomResourceDefinition) {
		for i := range crd.Spec.Versions {
			spec := crd.Spec.Versions[i].Schema.OpenAPIV3Schema.Properties["spec"]
			query := spec.Properties["query"]
			query.XValidations, query.MaxLength = nil, nil
			spec.Properties["query"] = query
			crd.Spec.Versions[i].Schema.OpenAPIV3Schema.Properties["spec"] = spec
		}
	})
	hostile := []string{`{{range 64}}{{printf "%010000000d" 0}}{{end}}`, `{{range 1000000000000}}{{end}}`}
	var templates []*sluicev1.MetricTemplate
	for i, q := range hostile {
		mt := &sluicev1.MetricTemplate{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("hostile-%d", i), Namespace: ns},
			Spec: sluicev1.MetricTemplateSpec{Query: q}}
		if err := testenv.CreateEventually(ctx, env.Client, mt); err != nil {
			t.Fatalf("writing %q past admission: %v", q, err)
		}
		templates = append(templates, mt)
	}
	// The upgrade: once the rule is back, a new hostile template is refused again.
	restore()
	probe := &sluicev1.MetricTemplate{ObjectMeta: metav1.ObjectMeta{Name: "probe", Namespace: ns},
		Spec: sluicev1.MetricTemplateSpec{Query: hostile[1]}}
	for deadline := time.Now().Add(30 * time.Second); env.Client.Create(ctx, probe.DeepCopy()) == nil; {
		if err := env.Client.Delete(ctx, probe); err != nil {
			t.Fatal(err)
		}
		if time.Now().After(deadline) {
			t.Fatal("the restored CRD still admits hostile templates")
		}
		time.Sleep(100 * time.Millisecond)
	}

	mgr, err := ctrl.NewManager(env.Config, ctrl.Options{Scheme: env.Scheme, Metrics: metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0", Controller: config.Controller{SkipNameValidation: ptr.To(true)}})
	if err != nil {
		t.Fatal(err)
	}
	if err := (&Reconciler{Client: mgr.GetClient()}).SetupWithManager(mgr); err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	start := time.Now()
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	defer func() { cancel(); <-done }()
	for i, mt := range templates {
		cond := waitReady(t, mt, metav1.ConditionFalse)
		if cond.Reason != sluicev1.ReasonInvalidQuery || !strings.Contains(cond.Message, "range {{range") ||
			!strings.Contains(cond.Message, "is not allowed") {
			t.Errorf("%s: condition %+v; want InvalidQuery naming the range action", hostile[i], cond)
		}
	}
	t.Logf("both InvalidQuery %s after the controller started", time.Since(start))
	runtime.ReadMemStats(&after)
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 64<<20 {
		t.Errorf("%d MiB allocated while the hostile templates were checked", alloc>>20)
	}
}
