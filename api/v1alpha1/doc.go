// Package v1alpha1 holds the sluice.dev/v1alpha1 API: Canary, MetricTemplate and AlertProvider.
//
// Field names follow Flagger's flagger.app/v1beta1 Canary where the idea is the same, so that
// manifests port with little more than an apiVersion change. Validation lives in kubebuilder and CEL
// markers so invalid specs are rejected at admission with a message naming the field.
//
// +kubebuilder:object:generate=true
// +groupName=sluice.dev
package v1alpha1
