package v1alpha1

// ServiceNames are the names of the three Services of a Canary: the apex Service clients call,
// and the primary and canary Services the traffic is split between.
type ServiceNames struct {
	Apex, Primary, Canary string
}

// ServiceNames returns the apex, primary and canary Service names: spec.service.name (default
// the target's name), then the same with -primary and -canary suffixes.
func (c *Canary) ServiceNames() ServiceNames {
	apex := c.Spec.Service.Name
	if apex == "" {
		apex = c.Spec.TargetRef.Name
	}
	return ServiceNames{Apex: apex, Primary: apex + "-primary", Canary: apex + "-canary"}
}
