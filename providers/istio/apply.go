package istio

import (
	"context"
	"fmt"

	istioapplyv1 "istio.io/client-go/pkg/applyconfiguration/networking/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"sluice.dev/sluice/providers"
)

// Istio's generated apply configurations predate the accessors controller-runtime's Client.Apply
// reads (GetName, GetNamespace, GetKind, GetAPIVersion) and the runtime.ApplyConfiguration
// marker. The two adapters below add them; the request body is the Istio apply configuration's
// own JSON (its spec marshals through Istio's jsonpb shim, so only fields set are sent).

// vsApply adapts a VirtualService apply configuration to controller-runtime.
type vsApply struct {
	*istioapplyv1.VirtualServiceApplyConfiguration
}

func (vsApply) IsApplyConfiguration()        {}
func (a vsApply) GetName() *string           { return a.Name }
func (a vsApply) GetNamespace() *string      { return a.Namespace }
func (a vsApply) GetKind() *string           { return a.Kind }
func (a vsApply) GetAPIVersion() *string     { return a.APIVersion }
func (a vsApply) describe() (string, string) { return "VirtualService", *a.Namespace + "/" + *a.Name }

// drApply adapts a DestinationRule apply configuration to controller-runtime.
type drApply struct {
	*istioapplyv1.DestinationRuleApplyConfiguration
}

func (drApply) IsApplyConfiguration()        {}
func (a drApply) GetName() *string           { return a.Name }
func (a drApply) GetNamespace() *string      { return a.Namespace }
func (a drApply) GetKind() *string           { return a.Kind }
func (a drApply) GetAPIVersion() *string     { return a.APIVersion }
func (a drApply) describe() (string, string) { return "DestinationRule", *a.Namespace + "/" + *a.Name }

// applyConfig is an adapted apply configuration; pass a pointer so the response can be decoded.
type applyConfig interface {
	runtime.ApplyConfiguration
	describe() (kind, key string)
}

// apply writes ac with server-side apply as providers.FieldManager, taking over conflicting
// fields. errors: API errors (a Conflict when ac carries a stale resourceVersion), wrapped.
func (r *Router) apply(ctx context.Context, ac applyConfig) error {
	if err := r.c.Apply(ctx, ac, client.FieldOwner(providers.FieldManager), client.ForceOwnership); err != nil {
		kind, key := ac.describe()
		return fmt.Errorf("applying %s %s: %w", kind, key, err)
	}
	return nil
}
