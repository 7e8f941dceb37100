package dataplane

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
)

func TestMetricsFollowStatus(t *testing.T) {
	dp := &sluicev1.DataPlane{ObjectMeta: metav1.ObjectMeta{Name: "m"},
		Status: sluicev1.DataPlaneStatus{Phase: sluicev1.DataPlaneProgressing, CurrentWave: 2, Desired: 36, Current: 18}}
	observeMetrics(dp)
	for name, tt := range map[string]struct{ got, want float64 }{
		"phase":   {testutil.ToFloat64(dpPhase.WithLabelValues("m")), 2},
		"wave":    {testutil.ToFloat64(dpWave.WithLabelValues("m")), 2},
		"desired": {testutil.ToFloat64(dpDesired.WithLabelValues("m")), 36},
		"current": {testutil.ToFloat64(dpCurrent.WithLabelValues("m")), 18},
	} {
		if tt.got != tt.want {
			t.Errorf("%s = %v, want %v", name, tt.got, tt.want)
		}
	}
	forgetMetrics("m")
	for _, g := range dpGauges {
		if g.DeleteLabelValues("m") {
			t.Error("a series of m is left after forgetMetrics")
		}
	}
}
