package istio

import (
	"context"
	"fmt"
	"slices"

	"google.golang.org/protobuf/proto"
	networkingv1 "istio.io/api/networking/v1"
	istionetv1 "istio.io/client-go/pkg/apis/networking/v1"
	istioapplymetav1 "istio.io/client-go/pkg/applyconfiguration/meta/v1"
	istioapplyv1 "istio.io/client-go/pkg/applyconfiguration/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/providers"
)

// ErrNotControlled means an object Sluice would generate already exists and is not controlled by
// the Canary (someone else's VirtualService or DestinationRule of the same name).
var ErrNotControlled error = providers.Permanent(sluicev1.ReasonRouteConflict, "object exists and is not controlled by the Canary")

// defaultGateway is the gateway of a generated VirtualService without spec.service.gateways: the
// sidecars of the mesh.
const defaultGateway = "mesh"

// reconcileGenerated applies the generated VirtualService (at its current weights, 100/0 when new)
// and DestinationRules. Nothing is written when they are as desired. errors: see Reconcile.
func (r *Router) reconcileGenerated(ctx context.Context, canary *sluicev1.Canary) error {
	tp, err := convertTrafficPolicy(canary.Spec.Service.TrafficPolicy)
	if err != nil {
		return err
	}
	n := canary.ServiceNames()
	vs := &istionetv1.VirtualService{}
	ok, err := r.getControlled(ctx, canary, n.Apex, vs)
	if err != nil {
		return err
	}
	w, ab, e := providers.CanaryWeight(0), false, extras{}
	if ok {
		w, ab, e = currentWeights(vs, canary), hasABRoutes(vs.Spec.GetHttp()), scopeOf(canary).extrasOf(vs.Spec.GetHttp())
	} else {
		vs = nil
	}
	if err := r.ensureVirtualService(ctx, canary, vs, w, ab, e); err != nil {
		return err
	}
	for _, host := range []string{n.Primary, n.Canary} {
		if err := r.ensureDestinationRule(ctx, canary, host, tp); err != nil {
			return err
		}
	}
	return nil
}

// currentWeights reads the split of an existing generated VirtualService; when someone made it
// unreadable it falls back to status.canaryWeight, the engine's memory (or 100/0).
func currentWeights(vs *istionetv1.VirtualService, canary *sluicev1.Canary) providers.Weights {
	if w, managed, err := scopeOf(canary).weightsOf(vs.Spec.GetHttp()); err == nil && managed > 0 {
		return w
	}
	if w := providers.CanaryWeight(canary.Status.CanaryWeight); w.Validate() == nil {
		return w
	}
	return providers.CanaryWeight(0)
}

// setGenerated applies the generated VirtualService at w. errors: see SetRoutes.
func (r *Router) setGenerated(ctx context.Context, canary *sluicev1.Canary, w providers.Weights) error {
	n := canary.ServiceNames()
	vs := &istionetv1.VirtualService{}
	ok, err := r.getControlled(ctx, canary, n.Apex, vs)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("%w: VirtualService %s/%s (Reconcile creates it)", providers.ErrRouteNotFound, canary.Namespace, n.Apex)
	}
	return r.ensureVirtualService(ctx, canary, vs, w, hasABRoutes(vs.Spec.GetHttp()), scopeOf(canary).extrasOf(vs.Spec.GetHttp()))
}

// setGeneratedAB applies the generated VirtualService at its current weights with (on) or without
// its A/B route. errors: see SetABRoutes.
func (r *Router) setGeneratedAB(ctx context.Context, canary *sluicev1.Canary, on bool) error {
	n := canary.ServiceNames()
	vs := &istionetv1.VirtualService{}
	ok, err := r.getControlled(ctx, canary, n.Apex, vs)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("%w: VirtualService %s/%s (Reconcile creates it)", providers.ErrRouteNotFound, canary.Namespace, n.Apex)
	}
	return r.ensureVirtualService(ctx, canary, vs, currentWeights(vs, canary), on, scopeOf(canary).extrasOf(vs.Spec.GetHttp()))
}

// finalizeGenerated deletes the generated VirtualService and DestinationRules the Canary controls.
// errors: API errors.
func (r *Router) finalizeGenerated(ctx context.Context, canary *sluicev1.Canary) error {
	n := canary.ServiceNames()
	objs := []client.Object{
		&istionetv1.VirtualService{}, &istionetv1.DestinationRule{}, &istionetv1.DestinationRule{},
	}
	for i, name := range []string{n.Apex, n.Primary, n.Canary} {
		obj := objs[i]
		key := types.NamespacedName{Namespace: canary.Namespace, Name: name}
		if err := r.c.Get(ctx, key, obj); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return fmt.Errorf("reading %s %s: %w", kindOf(obj), key, err)
		}
		if !metav1.IsControlledBy(obj, canary) {
			continue
		}
		uid := obj.GetUID()
		err := r.c.Delete(ctx, obj, client.Preconditions{UID: &uid})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting %s %s: %w", kindOf(obj), key, err)
		}
	}
	return nil
}

// getControlled reads name into obj; false when it does not exist.
// errors: ErrNotControlled, API errors.
func (r *Router) getControlled(ctx context.Context, canary *sluicev1.Canary, name string, obj client.Object) (bool, error) {
	key := types.NamespacedName{Namespace: canary.Namespace, Name: name}
	if err := r.c.Get(ctx, key, obj); err != nil {
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return false, fmt.Errorf("reading %s %s: %w", kindOf(obj), key, err)
	}
	if !metav1.IsControlledBy(obj, canary) {
		return false, fmt.Errorf("%w: %s %s (Canary %s); use spec.service.routeRef to route with an existing VirtualService",
			ErrNotControlled, kindOf(obj), key, canary.Name)
	}
	return true, nil
}

// ensureVirtualService applies the generated VirtualService at w, with its A/B route when ab and
// with extras e, unless existing (nil: none) already has that spec. An update carries existing's resourceVersion,
// so a copy read from a lagging cache cannot overwrite newer weights.
func (r *Router) ensureVirtualService(ctx context.Context, canary *sluicev1.Canary, existing *istionetv1.VirtualService, w providers.Weights, ab bool, e extras) error {
	spec, err := desiredVirtualService(canary, w, ab)
	if err != nil {
		return err
	}
	if spec.Http, err = scopeOf(canary).withExtras(spec.Http, e); err != nil {
		return err
	}
	if existing != nil && proto.Equal(&existing.Spec, spec) {
		return nil
	}
	ac := istioapplyv1.VirtualService(canary.ServiceNames().Apex, canary.Namespace).
		WithLabels(map[string]string{sluicev1.LabelCanary: canary.Name}).
		WithOwnerReferences(ownerRef(canary))
	if existing != nil {
		ac.WithResourceVersion(existing.ResourceVersion)
	}
	ac.Spec = spec
	return r.apply(ctx, &vsApply{ac})
}

// ensureDestinationRule applies the DestinationRule for host with tp unless it exists as desired.
func (r *Router) ensureDestinationRule(ctx context.Context, canary *sluicev1.Canary, host string, tp *networkingv1.TrafficPolicy) error {
	spec := &networkingv1.DestinationRule{Host: host, TrafficPolicy: proto.CloneOf(tp)}
	existing := &istionetv1.DestinationRule{}
	ok, err := r.getControlled(ctx, canary, host, existing)
	if err != nil {
		return err
	}
	if ok && proto.Equal(&existing.Spec, spec) {
		return nil
	}
	ac := istioapplyv1.DestinationRule(host, canary.Namespace).
		WithLabels(map[string]string{sluicev1.LabelCanary: canary.Name}).WithOwnerReferences(ownerRef(canary))
	if ok {
		ac.WithResourceVersion(existing.ResourceVersion)
	}
	ac.Spec = spec
	return r.apply(ctx, &drApply{ac})
}

// desiredVirtualService is the generated VirtualService spec at w (see the package doc), with the
// A/B route of spec.analysis.match before its route when ab (see withABRoutes).
// errors: ErrInvalidSpec.
func desiredVirtualService(canary *sluicev1.Canary, w providers.Weights, ab bool) (*networkingv1.VirtualService, error) {
	svc := canary.Spec.Service
	n := canary.ServiceNames()
	route := &networkingv1.HTTPRoute{
		Route: []*networkingv1.HTTPRouteDestination{
			{Destination: destination(n.Primary, svc.Port), Weight: w.Primary},
			{Destination: destination(n.Canary, svc.Port), Weight: w.Canary},
		},
		Headers: convertHeaders(svc.Headers),
	}
	var err error
	if route.Match, err = convertMatch(svc.Match); err != nil {
		return nil, err
	}
	if route.Retries, err = convertRetries(svc.Retries); err != nil {
		return nil, err
	}
	if route.Timeout, err = convertDuration("spec.service.timeout", svc.Timeout); err != nil {
		return nil, err
	}
	if route.CorsPolicy, err = convertCorsPolicy(svc.CorsPolicy); err != nil {
		return nil, err
	}
	if rw := svc.Rewrite; rw != nil && (rw.URI != "" || rw.Authority != "") {
		route.Rewrite = &networkingv1.HTTPRewrite{Uri: rw.URI, Authority: rw.Authority}
	}
	hosts := []string{n.Apex}
	for _, h := range svc.Hosts {
		if !slices.Contains(hosts, h) {
			hosts = append(hosts, h)
		}
	}
	gateways := slices.Clone(svc.Gateways)
	if len(gateways) == 0 {
		gateways = []string{defaultGateway}
	}
	http := []*networkingv1.HTTPRoute{route}
	if ab {
		matches, err := abMatches(canary)
		if err != nil {
			return nil, err
		}
		if http, err = scopeOf(canary).withABRoutes(http, matches); err != nil {
			return nil, err
		}
	}
	return &networkingv1.VirtualService{Hosts: hosts, Gateways: gateways, Http: http}, nil
}

// destination names host at port (no port selector when port is 0).
func destination(host string, port int32) *networkingv1.Destination {
	d := &networkingv1.Destination{Host: host}
	if port > 0 {
		d.Port = &networkingv1.PortSelector{Number: uint32(port)}
	}
	return d
}

// kindOf names the kind of a generated object in messages.
func kindOf(obj client.Object) string {
	switch obj.(type) {
	case *istionetv1.VirtualService:
		return "VirtualService"
	case *istionetv1.DestinationRule:
		return "DestinationRule"
	}
	return fmt.Sprintf("%T", obj)
}

// ownerRef makes the Canary the controller of a generated object, so it is garbage collected
// with the Canary.
func ownerRef(canary *sluicev1.Canary) *istioapplymetav1.OwnerReferenceApplyConfiguration {
	return istioapplymetav1.OwnerReference().
		WithAPIVersion(sluicev1.GroupVersion.String()).
		WithKind("Canary").
		WithName(canary.Name).
		WithUID(canary.UID).
		WithController(true).
		WithBlockOwnerDeletion(true)
}
