package canary

import (
	"encoding/json"
	"fmt"
	"maps"

	corev1 "k8s.io/api/core/v1"
)

// AnnotationOriginalService on an apex Service Sluice took over keeps what the user had written
// (selector, ports, labels), so deletion with revertOnDeletion leaves the Service exactly as it
// was.
const AnnotationOriginalService = "sluice.dev/original-service"

// serviceSnapshot is the part of a Service Sluice changes when it takes it over.
type serviceSnapshot struct {
	Selector map[string]string    `json:"selector,omitempty"`
	Ports    []corev1.ServicePort `json:"ports,omitempty"`
	Labels   map[string]string    `json:"labels,omitempty"`
}

// rememberOriginal records svc's selector, ports and labels in its AnnotationOriginalService
// annotation, unless it already has one (a takeover is remembered once, as the user left it).
func rememberOriginal(svc *corev1.Service) error {
	if _, ok := svc.Annotations[AnnotationOriginalService]; ok {
		return nil
	}
	data, err := json.Marshal(serviceSnapshot{Selector: svc.Spec.Selector, Ports: svc.Spec.Ports, Labels: svc.Labels})
	if err != nil {
		return fmt.Errorf("remembering service %s: %w", svc.Name, err)
	}
	if svc.Annotations == nil {
		svc.Annotations = map[string]string{}
	}
	svc.Annotations[AnnotationOriginalService] = string(data)
	return nil
}

// restoreOriginal puts svc back as the user had it before Sluice took it over, and reports
// whether it had been taken over. A Service Sluice created instead selects the target's pods and
// loses Sluice's label.
func restoreOriginal(svc *corev1.Service, target workload) (bool, error) {
	raw, ok := svc.Annotations[AnnotationOriginalService]
	if !ok {
		svc.Spec.Selector = maps.Clone(target.selector().MatchLabels)
		delete(svc.Labels, LabelCanary)
		return false, nil
	}
	var snap serviceSnapshot
	if err := json.Unmarshal([]byte(raw), &snap); err != nil {
		return true, fmt.Errorf("reading annotation %s of service %s: %w", AnnotationOriginalService, svc.Name, err)
	}
	svc.Spec.Selector = snap.Selector
	svc.Spec.Ports = snap.Ports
	svc.Labels = snap.Labels
	delete(svc.Annotations, AnnotationOriginalService)
	if len(svc.Annotations) == 0 {
		svc.Annotations = nil
	}
	return true, nil
}
