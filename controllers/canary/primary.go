package canary

import (
	"fmt"
	"maps"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
)

// Labels and annotations Sluice puts on the objects it creates.
const (
	// AnnotationRevision on the primary Deployment names the revision it runs.
	AnnotationRevision = "sluice.dev/revision"
	// LabelCanary on every generated object names the owning Canary (Sluice's ownership label).
	LabelCanary = sluicev1.LabelCanary
	// primarySuffix is appended to the primary Deployment, its selector label values and configs.
	primarySuffix = "-primary"
)

// primaryName is the name of a primary object: <name>-primary.
func primaryName(name string) string { return name + primarySuffix }

// primarySelector returns the target's selector labels with every value suffixed -primary, so
// primary pods never match the canary's selector.
func primarySelector(target *appsv1.Deployment) (map[string]string, error) {
	sel := target.Spec.Selector
	if sel == nil || len(sel.MatchLabels) == 0 {
		return nil, fmt.Errorf("deployment %s has no selector matchLabels", target.Name)
	}
	if len(sel.MatchExpressions) > 0 {
		return nil, fmt.Errorf("deployment %s selector uses matchExpressions, which Sluice cannot mirror for the primary", target.Name)
	}
	out := make(map[string]string, len(sel.MatchLabels))
	for k, v := range sel.MatchLabels {
		out[k] = v + primarySuffix
	}
	return out, nil
}

// primaryTemplate derives the primary's pod template from the target's: selector labels get the
// -primary suffix and tracked ConfigMap/Secret references point at the -primary copies.
func primaryTemplate(target *appsv1.Deployment, tracked []configRef) (corev1.PodTemplateSpec, error) {
	sel, err := primarySelector(target)
	if err != nil {
		return corev1.PodTemplateSpec{}, err
	}
	tpl := *target.Spec.Template.DeepCopy()
	if tpl.Labels == nil {
		tpl.Labels = map[string]string{}
	}
	maps.Copy(tpl.Labels, sel)
	copied := map[string]bool{}
	for _, r := range tracked {
		copied[r.Key()] = true
	}
	renameConfigRefs(&tpl.Spec, func(kind, name string) string {
		if copied[kind+"/"+name] {
			return primaryName(name)
		}
		return name
	})
	return tpl, nil
}

// newPrimary builds <target>-primary running the target's template at revision, owned by the
// Canary. Replicas: the target's (at least 1).
func newPrimary(canary *sluicev1.Canary, target *appsv1.Deployment, tracked []configRef, revision string) (*appsv1.Deployment, error) {
	tpl, err := primaryTemplate(target, tracked)
	if err != nil {
		return nil, err
	}
	sel, _ := primarySelector(target)
	replicas := int32(1)
	if target.Spec.Replicas != nil && *target.Spec.Replicas > 0 {
		replicas = *target.Spec.Replicas
	}
	spec := *target.Spec.DeepCopy()
	spec.Replicas = &replicas
	spec.Selector = &metav1.LabelSelector{MatchLabels: sel}
	spec.Template = tpl
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{
			Name:        primaryName(target.Name),
			Namespace:   target.Namespace,
			Labels:      map[string]string{LabelCanary: canary.Name},
			Annotations: map[string]string{AnnotationRevision: revision},
		},
		Spec: spec,
	}, nil
}

// servicePort is the port of the apex, primary and canary Services.
func servicePort(canary *sluicev1.Canary) corev1.ServicePort {
	svc := canary.Spec.Service
	name := svc.PortName
	if name == "" {
		name = "http"
	}
	target := intstr.FromInt32(svc.Port)
	if svc.TargetPort != nil {
		target = *svc.TargetPort
	}
	return corev1.ServicePort{Name: name, Port: svc.Port, TargetPort: target, Protocol: corev1.ProtocolTCP,
		AppProtocol: svc.AppProtocol}
}

// desiredServices returns the apex Service (selecting primary pods; see apexSelector for provider
// kubernetes), <apex>-primary and <apex>-canary (selecting the target's pods), each with the
// Canary's port (and the discovered ones), spec.service's metadata, and headless when asked.
func desiredServices(canary *sluicev1.Canary, target *appsv1.Deployment) ([]*corev1.Service, error) {
	primarySel, err := primarySelector(target)
	if err != nil {
		return nil, err
	}
	names := canary.ServiceNames()
	main := servicePort(canary)
	ports := append([]corev1.ServicePort{main}, discoveredPorts(canary, target, main)...)
	mk := func(name string, role serviceRole, selector map[string]string) *corev1.Service {
		svc := &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: canary.Namespace,
				Labels: map[string]string{LabelCanary: canary.Name}},
			Spec: corev1.ServiceSpec{Selector: selector, Ports: ports, Type: corev1.ServiceTypeClusterIP},
		}
		decorate(canary, role, svc)
		return svc
	}
	return []*corev1.Service{
		mk(names.Apex, roleApex, primarySel),
		mk(names.Primary, rolePrimary, primarySel),
		mk(names.Canary, roleCanary, maps.Clone(target.Spec.Selector.MatchLabels)),
	}, nil
}
