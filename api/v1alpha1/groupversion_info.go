package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the API group and version of every Sluice resource.
	GroupVersion = schema.GroupVersion{Group: "sluice.dev", Version: "v1alpha1"}

	// SchemeBuilder registers the Sluice types with a runtime.Scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds the Sluice types to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
