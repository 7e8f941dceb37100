package canary

import (
	"fmt"
	"maps"
	"strings"

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
func primarySelector(target workload) (map[string]string, error) {
	sel := target.selector()
	kind := strings.ToLower(target.kind())
	if sel == nil || len(sel.MatchLabels) == 0 {
		return nil, fmt.Errorf("%s %s has no selector matchLabels", kind, target.obj().GetName())
	}
	if len(sel.MatchExpressions) > 0 {
		return nil, fmt.Errorf("%s %s selector uses matchExpressions, which Sluice cannot mirror for the primary", kind, target.obj().GetName())
	}
	out := make(map[string]string, len(sel.MatchLabels))
	for k, v := range sel.MatchLabels {
		out[k] = v + primarySuffix
	}
	return out, nil
}

// primaryTemplate derives the primary's pod template from the target's: selector labels get the
// -primary suffix and tracked ConfigMap/Secret references point at the -primary copies.
func primaryTemplate(target workload, tracked []configRef) (corev1.PodTemplateSpec, error) {
	sel, err := primarySelector(target)
	if err != nil {
		return corev1.PodTemplateSpec{}, err
	}
	tpl := *target.revisionTemplate().DeepCopy()
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
// Canary, of the target's kind. Replicas: the target's (at least 1); a DaemonSet primary runs on
// the target's nodes.
func newPrimary(canary *sluicev1.Canary, target workload, tracked []configRef, revision string) (workload, error) {
	tpl, err := primaryTemplate(target, tracked)
	if err != nil {
		return nil, err
	}
	sel, _ := primarySelector(target)
	meta := metav1.ObjectMeta{
		Name:        primaryName(target.obj().GetName()),
		Namespace:   target.obj().GetNamespace(),
		Labels:      map[string]string{LabelCanary: canary.Name},
		Annotations: map[string]string{AnnotationRevision: revision},
	}
	switch t := target.(type) {
	case daemonSet:
		spec := *t.d.Spec.DeepCopy()
		spec.Selector = &metav1.LabelSelector{MatchLabels: sel}
		spec.Template = tpl
		return daemonSet{&appsv1.DaemonSet{ObjectMeta: meta, Spec: spec}}, nil
	case deployment:
		replicas := int32(1)
		if r := t.d.Spec.Replicas; r != nil && *r > 0 {
			replicas = *r
		}
		spec := *t.d.Spec.DeepCopy()
		spec.Replicas = &replicas
		spec.Selector = &metav1.LabelSelector{MatchLabels: sel}
		spec.Template = tpl
		return deployment{&appsv1.Deployment{ObjectMeta: meta, Spec: spec}}, nil
	}
	return nil, fmt.Errorf("target kind %s has no primary", target.kind())
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

// primaryService labels the primary Service with its role, for the EndpointSlice controller to
// copy onto its slices (the cache selects those alone; see sluicev1.LabelServiceRole). A primary
// Service created by an older Sluice lacks it: serviceMatches then fails and ensureServices adds
// it on the next reconcile.
func primaryService(svc *corev1.Service) *corev1.Service {
	svc.Labels[sluicev1.LabelServiceRole] = sluicev1.ServiceRolePrimary
	return svc
}

// desiredServices returns the apex Service (selecting primary pods; see apexSelector for provider
// kubernetes), <apex>-primary and <apex>-canary (selecting the target's pods), each with the
// Canary's port (and the discovered ones), spec.service's metadata, and headless when asked.
func desiredServices(canary *sluicev1.Canary, target workload) ([]*corev1.Service, error) {
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
		primaryService(mk(names.Primary, rolePrimary, primarySel)),
		mk(names.Canary, roleCanary, maps.Clone(target.selector().MatchLabels)),
	}, nil
}
