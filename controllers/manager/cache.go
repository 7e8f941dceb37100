package manager

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sluicev1 "sluice.dev/sluice/api/v1alpha1"
)

// managerCache is the manager's cache: cacheOptions, keeping only what the controllers read
// (cachetrim.go), of the EndpointSlices only the primary Services' (cacheslices.go), and of the
// Canaries only this shard's (shard.go).
func managerCache(o Options, shard labels.Selector) cache.Options {
	opts := cacheOptions(o)
	trimCache(&opts)
	sliceCache(&opts)
	shardCache(&opts, shard)
	return opts
}

// cacheOptions configures the informer cache:
//   - managed fields are dropped from every object (nothing reads them; ~30 % of the heap);
//   - Secrets and ConfigMaps are watched as metadata only (the canary controller's watches), and
//     whatever the cache keeps of them loses its contents and annotations (kubectl's
//     last-applied annotation repeats a Secret's data), so no Secret or ConfigMap contents are
//     ever cached cluster-wide; typed reads bypass the cache (clientOptions) and go through
//     configread;
//   - with Namespaces, every namespaced kind is cached in those only, but MetricTemplates and
//     AlertProviders also in the controller's own namespace, where shared ones live.
func cacheOptions(o Options) cache.Options {
	opts := cache.Options{
		DefaultTransform: cache.TransformStripManagedFields(),
		ByObject: map[client.Object]cache.ByObject{
			&corev1.Secret{}:    {Transform: stripContents},
			&corev1.ConfigMap{}: {Transform: stripContents},
		},
	}
	if len(o.Namespaces) == 0 {
		return opts
	}
	opts.DefaultNamespaces = map[string]cache.Config{}
	shared := map[string]cache.Config{}
	for _, ns := range o.Namespaces {
		opts.DefaultNamespaces[ns] = cache.Config{}
		shared[ns] = cache.Config{}
	}
	if o.ControllerNamespace != "" {
		shared[o.ControllerNamespace] = cache.Config{}
	}
	for _, obj := range []client.Object{&sluicev1.MetricTemplate{}, &sluicev1.AlertProvider{}} {
		opts.ByObject[obj] = cache.ByObject{Namespaces: shared}
	}
	// Namespaces of ByObject entries that set none default to DefaultNamespaces.
	return opts
}

// clientOptions makes typed reads of Secrets and ConfigMaps go to the apiserver: the cache holds
// none of their contents.
func clientOptions() client.Options {
	return client.Options{Cache: &client.CacheOptions{DisableFor: []client.Object{&corev1.Secret{}, &corev1.ConfigMap{}}}}
}

// stripContents is the cache transform of Secrets and ConfigMaps: only identity, labels, owners
// and resourceVersion stay.
var stripContents toolscache.TransformFunc = func(in any) (any, error) {
	switch o := in.(type) {
	case *corev1.Secret:
		o.Data, o.StringData = nil, nil
	case *corev1.ConfigMap:
		o.Data, o.BinaryData = nil, nil
	case *metav1.PartialObjectMetadata:
	default:
		return in, nil
	}
	if m, err := meta.Accessor(in); err == nil {
		m.SetAnnotations(nil)
		m.SetManagedFields(nil)
	}
	return in, nil
}
