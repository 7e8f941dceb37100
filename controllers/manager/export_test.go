package manager

import "sigs.k8s.io/controller-runtime/pkg/cache"

// CacheOptions is the cache options New gives the manager (no shard), for the measurements of
// the external tests.
func CacheOptions(o Options) cache.Options { return managerCache(o, nil) }
