// Package configread reads Secrets and ConfigMaps without a cluster-wide cache of their contents.
//
// The manager caches only their metadata (a metadata-only watch, annotations and managed fields
// stripped, since kubectl's last-applied annotation repeats a Secret's data), and typed reads
// bypass the cache. Client.Get of a Secret or ConfigMap looks up the object's metadata in that
// cache and reads the object from the apiserver only when its resourceVersion differs from the
// copy read last, so an idle Canary still costs no request. What Client writes (creates, patches,
// updates) is kept as the apiserver returned it, so the -primary copies Sluice makes are not read
// back at the next promotion. The copies kept are those of objects Sluice actually read or wrote —
// the ones Canaries reference (tracked configs, their -primary copies and restore points,
// credentials and alert Secrets) — never every Secret of the cluster; a copy not read for
// Options.TTL is dropped.
package configread
