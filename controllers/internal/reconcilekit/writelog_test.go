package reconcilekit

import (
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestWriteLogBehind: a cache is behind exactly while it shows the version a recorded write
// replaced, within OwnWriteMemory; not for the version the write produced or a later one, not
// for a write that changed nothing, and not for another kind of object with the same name.
func TestWriteLogBehind(t *testing.T) {
	at := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	deployment := func(rv string) *appsv1.Deployment {
		return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "podinfo", ResourceVersion: rv}}
	}
	var log WriteLog
	log.Wrote(deployment("11"), "10", at)
	for _, c := range []struct {
		name   string
		cached string
		now    time.Time
		want   bool
	}{
		{"the replaced version", "10", at.Add(time.Second), true},
		{"the written version", "11", at.Add(time.Second), false},
		{"a later version", "12", at.Add(time.Second), false},
		{"the replaced version past the memory", "10", at.Add(OwnWriteMemory + time.Second), false},
	} {
		t.Run(c.name, func(t *testing.T) {
			var l WriteLog
			l.Wrote(deployment("11"), "10", at)
			if got := l.Behind(deployment(c.cached), c.now); got != c.want {
				t.Fatalf("Behind(rv %s) = %v, want %v", c.cached, got, c.want)
			}
		})
	}
	if log.Behind(&appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "podinfo", ResourceVersion: "10"}}, at) {
		t.Fatal("a DaemonSet of the same name counts as the written Deployment")
	}
	log.Wrote(deployment("20"), "20", at)
	if log.Behind(deployment("20"), at) {
		t.Fatal("a write that kept the version (changed nothing) makes the cache wait for it")
	}
	// Once the cache showed another version, the write is forgotten: nothing is held for it.
	log.Wrote(deployment("31"), "30", at)
	if log.Behind(deployment("31"), at) {
		t.Fatal("the written version counts as behind")
	}
	if _, held := log.patchedFrom.Load(keyOf(deployment("31"))); held {
		t.Fatal("the log still holds a write its cache has shown")
	}
}
