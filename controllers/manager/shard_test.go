package manager

import (
	"testing"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/rest"
)

// TestShardNamesLeaseWriterAndEvents: a shard elects on its own Lease, writes as
// sluice-shard-<name> and reports its events under that name; an unsharded manager keeps the
// plain names. A selector without a name, a bad name and a selector that does not parse are refused.
func TestShardNamesLeaseWriterAndEvents(t *testing.T) {
	b := Options{Shard: "sluice.dev/shard=b", ShardName: "b"}
	if err := validateShard(b); err != nil {
		t.Fatal(err)
	}
	cfg := &rest.Config{UserAgent: "default"}
	shardUserAgent(cfg, b)
	if got := leaseName(b); got != "sluice.sluice.dev-b" {
		t.Errorf("lease %q", got)
	}
	if cfg.UserAgent != "sluice-shard-b" || reportingController(b) != "sluice-shard-b" {
		t.Errorf("user agent %q, reporting controller %q: want both sluice-shard-b", cfg.UserAgent, reportingController(b))
	}
	if a := eventAnnotations(b); a[AnnotationEventShard] != "b" || a[AnnotationEventInstance] == "" {
		t.Errorf("event annotations %v", a)
	}
	plain := Options{}
	cfg = &rest.Config{UserAgent: "default"}
	shardUserAgent(cfg, plain)
	if leaseName(plain) != "sluice.sluice.dev" || cfg.UserAgent != "default" || reportingController(plain) != "sluice" || eventAnnotations(plain) != nil {
		t.Errorf("unsharded: lease %q, user agent %q, reporting controller %q", leaseName(plain), cfg.UserAgent, reportingController(plain))
	}
	for _, bad := range []Options{{Shard: "x=y"}, {Shard: "x=y", ShardName: "B_1"}} {
		if validateShard(bad) == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
	if _, err := shardSelector("sluice.dev/shard notin (b"); err == nil {
		t.Error("a selector that does not parse was accepted")
	}
	sel, err := shardSelector("sluice.dev/shard notin (b,c)")
	if err != nil || !sel.Matches(labels.Set{}) || sel.Matches(labels.Set{LabelShard: "b"}) {
		t.Errorf("default shard selector %v (%v)", sel, err)
	}
}
