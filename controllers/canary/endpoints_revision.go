package canary

import (
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
)

// Which ReplicaSet an endpoint's pod belongs to. An EndpointSlice names each endpoint's pod
// (targetRef), and a Deployment's pods are named after their ReplicaSet: <replicaset>-<5 random
// characters> (the apiserver's generateName, which cuts a base longer than 58 characters: then
// the pods' names may not show the whole ReplicaSet name, and the ReplicaSet is not told). The Deployment controller names the ReplicaSet of the current template in the
// Deployment's Progressing condition, in the same status write as the replica counts the plan
// reads. Together they tell a pod of the primary's current revision from one of the revision it
// rolled away from, which counts of ready endpoints cannot (plan.Endpoints.OtherRevision).

// newReplicaSetReasons are the Progressing condition reasons whose message names the
// Deployment's new ReplicaSet (k8s.io/kubernetes pkg/controller/deployment/util: NewRSAvailable,
// ReplicaSetUpdated, NewReplicaSet, FoundNewRS, TimedOut).
var newReplicaSetReasons = map[string]bool{
	"NewReplicaSetAvailable": true, "ReplicaSetUpdated": true, "NewReplicaSetCreated": true,
	"FoundNewReplicaSet": true, "ProgressDeadlineExceeded": true,
}

// maxGeneratedBase is how much of generateName the apiserver keeps before the random suffix.
const maxGeneratedBase = 63 - 5

// currentReplicaSet is the ReplicaSet of the primary Deployment's current template, as its
// Progressing condition names it once the Deployment controller has seen the current generation;
// "" when it cannot be told (a DaemonSet, a paused Deployment, a status from before the current
// generation, a message that names no ReplicaSet of this Deployment, a name too long to show
// whole in its pods' names).
func currentReplicaSet(primary workload) string {
	if primary == nil {
		return ""
	}
	d, ok := primary.obj().(*appsv1.Deployment)
	if !ok || d.Status.ObservedGeneration < d.Generation {
		return ""
	}
	for _, c := range d.Status.Conditions {
		if c.Type != appsv1.DeploymentProgressing || !newReplicaSetReasons[c.Reason] {
			continue
		}
		// The messages quote the name (%q): `ReplicaSet "web-primary-7d9f8c" has successfully progressed.`
		_, rest, ok := strings.Cut(c.Message, `"`)
		name, _, closed := strings.Cut(rest, `"`)
		if ok && closed && strings.HasPrefix(name, d.Name+"-") && len(name)+1 <= maxGeneratedBase {
			return name
		}
	}
	return ""
}

// otherRevisionEndpoints counts the serving (not terminating) endpoints, each pod once, that are
// not pods of ReplicaSet rs; an endpoint that names no pod counts too (nothing shows it current).
func otherRevisionEndpoints(slices []discoveryv1.EndpointSlice, rs string) int32 {
	prefix := rs + "-"
	other := map[string]bool{}
	for _, sl := range slices {
		for _, ep := range sl.Endpoints {
			if ep.Conditions.Terminating != nil && *ep.Conditions.Terminating {
				continue
			}
			key := endpointKey(ep)
			if key == "" {
				continue
			}
			if ep.TargetRef == nil || ep.TargetRef.Kind != "Pod" || !strings.HasPrefix(ep.TargetRef.Name, prefix) {
				other[key] = true
			}
		}
	}
	return int32(len(other))
}

// endpointKey identifies an endpoint's pod (or, without a target reference, its address) across
// the slices of a dual-stack Service; "" when it has neither.
func endpointKey(ep discoveryv1.Endpoint) string {
	if ep.TargetRef != nil {
		return ep.TargetRef.Kind + "/" + ep.TargetRef.Name
	}
	if len(ep.Addresses) > 0 {
		return "address/" + ep.Addresses[0]
	}
	return ""
}
