package manager

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
	"sluice.dev/sluice/providers"
	"sluice.dev/sluice/providers/gatewayapi"
	"sluice.dev/sluice/providers/istio"
	"sluice.dev/sluice/providers/kubernetes"
)

// freshRouters are the traffic providers reading around the cache (the canary controller reads
// a route again through them before it calls a difference drift).
func freshRouters(c client.Client, reader client.Reader) map[sluicev1.Provider]providers.Router {
	fresh := readAround{Client: c, reader: reader}
	return map[sluicev1.Provider]providers.Router{
		sluicev1.ProviderGatewayAPI: gatewayapi.New(fresh),
		sluicev1.ProviderIstio:      istio.New(fresh),
		sluicev1.ProviderKubernetes: kubernetes.New(fresh),
	}
}

// readAround is a client whose reads go to the apiserver (reader) and writes through Client.
type readAround struct {
	client.Client
	reader client.Reader
}

func (r readAround) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	return r.reader.Get(ctx, key, obj, opts...)
}

func (r readAround) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	return r.reader.List(ctx, list, opts...)
}
