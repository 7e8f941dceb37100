package v1alpha1

func init() {
	SchemeBuilder.Register(&Canary{}, &CanaryList{}, &MetricTemplate{}, &MetricTemplateList{},
		&AlertProvider{}, &AlertProviderList{})
}
