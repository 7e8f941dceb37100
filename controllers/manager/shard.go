package manager

import (
	"fmt"
	"os"
	"reflect"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
)

// Sharding splits the Canaries of a cluster over several managers, each with its own replicas
// and leader election. A shard is a label selector on Canaries (Options.Shard): its manager
// caches, reconciles and counts only the Canaries the selector matches, and elects its leader on
// its own Lease (<LeaderElectionID>-<ShardName>). Nothing else is coordinated: Kubernetes label
// selectors decide which shard owns a Canary, Kubernetes Leases which replica of a shard acts.
//
// The chart deploys shards so that every Canary matches exactly one selector: the named shards
// select `sluice.dev/shard=<name>`, and the first shard (the default) selects
// `sluice.dev/shard notin (<the other names>)`, which also matches Canaries without the label and
// Canaries naming a shard that does not exist. Canaries that target one Deployment must be in one
// shard (a shard cannot see another's Canaries to detect the conflict).

// LabelShard is the Canary label the chart's shards select on.
const LabelShard = "sluice.dev/shard"

// Event annotations naming the manager that recorded an event.
const (
	// AnnotationEventShard is the shard's name (Options.ShardName).
	AnnotationEventShard = "sluice.dev/shard"
	// AnnotationEventInstance is the replica ($POD_NAME, else the host name).
	AnnotationEventInstance = "sluice.dev/instance"
)

// shardSelector parses Options.Shard; empty selects every Canary (nil).
// errors: a selector that does not parse.
func shardSelector(shard string) (labels.Selector, error) {
	if shard == "" {
		return nil, nil
	}
	sel, err := labels.Parse(shard)
	if err != nil {
		return nil, fmt.Errorf("--shard %q: %w", shard, err)
	}
	return sel, nil
}

// validateShard checks that a shard has a name that can suffix the Lease and the user agent.
// errors: a selector without a name, a name that is not a DNS label.
func validateShard(o Options) error {
	if o.ShardName == "" {
		if o.Shard != "" {
			return fmt.Errorf("--shard %q needs --shard-name: each shard elects its leader on its own Lease", o.Shard)
		}
		return nil
	}
	if errs := validation.IsDNS1123Label(o.ShardName); len(errs) > 0 {
		return fmt.Errorf("--shard-name %q: %v", o.ShardName, errs)
	}
	return nil
}

// leaseName is the shard's Lease: one per shard, so each shard has its own leader.
func leaseName(o Options) string {
	id := orDefault(o.LeaderElectionID, "sluice.sluice.dev")
	if o.ShardName == "" {
		return id
	}
	return id + "-" + o.ShardName
}

// shardCache restricts the Canary informer to the shard's selector.
func shardCache(opts *cache.Options, sel labels.Selector) {
	if sel == nil {
		return
	}
	key, by := byObject(opts, &sluicev1.Canary{})
	by.Label = sel
	opts.ByObject[key] = by
}

// byObject returns the cache's ByObject entry for obj's type (and the key it is stored under),
// creating the map; several entries for one type would be refused by the cache.
func byObject(opts *cache.Options, obj client.Object) (client.Object, cache.ByObject) {
	if opts.ByObject == nil {
		opts.ByObject = map[client.Object]cache.ByObject{}
	}
	for k, v := range opts.ByObject {
		if reflect.TypeOf(k) == reflect.TypeOf(obj) {
			return k, v
		}
	}
	return obj, cache.ByObject{}
}

// reportingController is the reporting controller of the manager's events: "sluice", or
// "sluice-shard-<name>" for a shard, the same name as its field manager.
func reportingController(o Options) string {
	if o.ShardName == "" {
		return "sluice"
	}
	return "sluice-shard-" + o.ShardName
}

// shardUserAgent names the shard in the user agent, which the apiserver records as the field
// manager of merge patches (status, Deployments): managedFields show which shard wrote.
func shardUserAgent(cfg *rest.Config, o Options) {
	if o.ShardName != "" {
		cfg.UserAgent = reportingController(o)
	}
}

// eventAnnotations name the shard and the replica on every event (nil without a shard).
func eventAnnotations(o Options) map[string]string {
	if o.ShardName == "" {
		return nil
	}
	instance := os.Getenv("POD_NAME")
	if instance == "" {
		instance, _ = os.Hostname()
	}
	return map[string]string{AnnotationEventShard: o.ShardName, AnnotationEventInstance: instance}
}
