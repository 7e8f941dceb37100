// Package kubernetes implements providers.Router without a mesh or gateway: blue/green at L4 by
// switching the selector of the apex Service (ClusterIP or headless) between the primary's pods
// and the canary's.
//
// The controller keeps <apex>-primary selecting the primary's pods and <apex>-canary selecting
// the target's; the router copies one of those selectors onto the apex Service. Canary weight 0
// means the apex selects the primary, 100 the canary; nothing in between exists (a Service
// cannot split traffic), so SetRoutes refuses other weights and the planner only runs blue/green
// with this provider. There are no route objects: Reconcile only checks that the three Services
// exist, A/B routing, mirroring and session affinity cannot be expressed and are refused when
// asked for, and Finalize has nothing to remove (the controller points the apex Service back at
// the target's pods when a Canary is deleted with revertOnDeletion).
//
// Reads go through the client given to New (a cached client is fine); the only write is a merge
// patch of the apex Service's selector, conditioned on the resourceVersion read, made only when
// the selector changes.
package kubernetes
