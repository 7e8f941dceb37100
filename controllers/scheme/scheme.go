// Package scheme builds the runtime.Scheme every Sluice binary and test uses: core Kubernetes,
// Sluice, Gateway API v1 and Istio networking v1 types.
package scheme

import (
	"fmt"

	istionetv1 "istio.io/client-go/pkg/apis/networking/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
)

// New returns a scheme with the core Kubernetes, Sluice, Gateway API v1 and Istio networking v1
// types. It panics only if a registration conflicts, which is a programming error.
func New() *runtime.Scheme {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		clientgoscheme.AddToScheme, sluicev1.AddToScheme, gwv1.Install, istionetv1.AddToScheme,
	} {
		if err := add(s); err != nil {
			panic(fmt.Sprintf("building scheme: %v", err))
		}
	}
	return s
}
