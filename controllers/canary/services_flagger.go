package canary

import (
	"fmt"
	"maps"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
)

// serviceRole is which of a Canary's three Services one is.
type serviceRole int

const (
	roleApex serviceRole = iota
	rolePrimary
	roleCanary
)

// decorate adds spec.service's metadata for role (apex, primary, canary) to svc, and makes the
// primary and canary Services headless with spec.service.headless.
func decorate(canary *sluicev1.Canary, role serviceRole, svc *corev1.Service) {
	s := canary.Spec.Service
	meta := map[serviceRole]*sluicev1.ServiceMetadata{roleApex: s.Apex, rolePrimary: s.Primary, roleCanary: s.Canary}[role]
	if meta != nil {
		labels := maps.Clone(meta.Labels)
		if labels == nil {
			labels = map[string]string{}
		}
		maps.Copy(labels, svc.Labels) // Sluice's own label wins
		svc.Labels = labels
		if len(meta.Annotations) > 0 {
			svc.Annotations = maps.Clone(meta.Annotations)
		}
	}
	if s.Headless && role != roleApex {
		svc.Spec.ClusterIP = corev1.ClusterIPNone
	}
}

// discoveredPorts are the target's other container ports (spec.service.portDiscovery), each
// named after the container port (or tcp-<port>) and forwarded to itself, skipping the main
// port's target and any port already listed.
func discoveredPorts(canary *sluicev1.Canary, target workload, main corev1.ServicePort) []corev1.ServicePort {
	if !canary.Spec.Service.PortDiscovery {
		return nil
	}
	var out []corev1.ServicePort
	seenPort := map[int32]bool{main.Port: true}
	seenName := map[string]bool{main.Name: true}
	for _, c := range target.podTemplate().Spec.Containers {
		for _, p := range c.Ports {
			if seenPort[p.ContainerPort] || (main.TargetPort.Type == intstr.String && main.TargetPort.StrVal == p.Name) ||
				(main.TargetPort.Type == intstr.Int && main.TargetPort.IntVal == p.ContainerPort) {
				continue
			}
			name := p.Name
			if name == "" || seenName[name] {
				name = fmt.Sprintf("tcp-%d", p.ContainerPort)
			}
			protocol := p.Protocol
			if protocol == "" {
				protocol = corev1.ProtocolTCP
			}
			seenPort[p.ContainerPort], seenName[name] = true, true
			out = append(out, corev1.ServicePort{Name: name, Port: p.ContainerPort, TargetPort: intstr.FromInt32(p.ContainerPort), Protocol: protocol})
		}
	}
	return out
}

// apexSelector is the selector ensureServices keeps on the apex Service. With provider kubernetes
// the router switches it between the primary's and the canary's pods: a selector that is one of
// them is left as it is; anything else (a new Service, someone's edit) becomes what the status
// says (the canary's while the canary holds all traffic, the primary's otherwise). Every other
// provider routes above the Service, which always selects the primary.
func apexSelector(canary *sluicev1.Canary, have *corev1.Service, primary, canarySel map[string]string) map[string]string {
	if providerOf(canary) != sluicev1.ProviderKubernetes {
		return primary
	}
	if have != nil && (maps.Equal(have.Spec.Selector, primary) || maps.Equal(have.Spec.Selector, canarySel)) {
		return have.Spec.Selector
	}
	if canary.Status.CanaryWeight == 100 {
		return canarySel
	}
	return primary
}

// headlessMismatch reports a Service whose clusterIP cannot become what spec.service.headless
// asks (the field is immutable).
func headlessMismatch(have, want *corev1.Service) error {
	if have.Spec.ClusterIP == "" || (have.Spec.ClusterIP == corev1.ClusterIPNone) == (want.Spec.ClusterIP == corev1.ClusterIPNone) {
		return nil
	}
	return fmt.Errorf("spec.service.headless is %t but Service %s has clusterIP %s, which cannot change: delete the Service and Sluice recreates it",
		want.Spec.ClusterIP == corev1.ClusterIPNone, have.Name, have.Spec.ClusterIP)
}
