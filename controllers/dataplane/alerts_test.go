package dataplane

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/controllers/dataplane/waves"
	"sluice.dev/sluice/controllers/scheme"
	"sluice.dev/sluice/egress"
	"sluice.dev/sluice/notify"
)

// TestAlertNotifierDeliversThroughAlertProviders sends a DataPlane's failure through a generic
// AlertProvider to a local receiver, and checks an info-only notification is not sent to an
// error-severity alert.
func TestAlertNotifierDeliversThroughAlertProviders(t *testing.T) {
	var got []notify.GenericPayload
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var p notify.GenericPayload
		if err := json.NewDecoder(r.Body).Decode(&p); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		got = append(got, p)
	}))
	defer rcv.Close()
	c := fake.NewClientBuilder().WithScheme(scheme.New()).WithObjects(
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "hook", Namespace: "ops"}, Data: map[string][]byte{"address": []byte(rcv.URL)}},
		&sluicev1.AlertProvider{ObjectMeta: metav1.ObjectMeta{Name: "oncall", Namespace: "ops"},
			Spec: sluicev1.AlertProviderSpec{Type: sluicev1.AlertProviderGeneric, SecretRef: corev1.LocalObjectReference{Name: "hook"}}},
	).Build()
	dp := &sluicev1.DataPlane{ObjectMeta: metav1.ObjectMeta{Name: "linkerd-edge"},
		Spec: sluicev1.DataPlaneSpec{Analysis: sluicev1.DataPlaneAnalysis{Alerts: []sluicev1.CanaryAlert{{Name: "oncall",
			Severity: sluicev1.SeverityError, ProviderRef: sluicev1.CrossNamespaceObjectReference{Name: "oncall", Namespace: "ops"}}}}},
		Status: sluicev1.DataPlaneStatus{Phase: sluicev1.DataPlaneRolledBack, Version: "edge-26.8.3"}}
	// The receiver listens on 127.0.0.1.
	loopback, err := egress.NewPolicy(egress.Options{AllowTo: []string{egress.Loopback}})
	if err != nil {
		t.Fatal(err)
	}
	n := notify.New(c, notify.Options{Egress: loopback})
	ctx := context.Background()
	alerts := dp.Spec.Analysis.Alerts
	if err := n.Check(ctx, "", alerts); err != nil {
		t.Fatal(err)
	}
	if err := n.Send(ctx, alerts, notification(dp, waves.Notification{Event: "UpToDate", Severity: sluicev1.SeverityInfo, Message: "done"})); err != nil {
		t.Fatal(err)
	}
	if err := n.Send(ctx, alerts, notification(dp, waves.Notification{Event: "RolledBack", Severity: sluicev1.SeverityError, Message: "wave 1 rolled back"})); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Name != "linkerd-edge" || got[0].Event != "DataPlaneRolledBack" || got[0].Text != "wave 1 rolled back" ||
		got[0].Revision != "edge-26.8.3" {
		t.Fatalf("received %+v; want only the RolledBack notification of linkerd-edge", got)
	}
}
