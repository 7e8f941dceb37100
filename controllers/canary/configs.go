package canary

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
)

// Config kinds tracked in a pod template, used as key prefixes of status.trackedConfigs.
const (
	kindConfigMap = "configmap"
	kindSecret    = "secret"
)

// configRef is a ConfigMap or Secret a pod template references.
type configRef struct {
	Kind     string // kindConfigMap or kindSecret
	Name     string
	Optional bool
}

// Key is the status.trackedConfigs key, e.g. "configmap/app-config".
func (r configRef) Key() string { return r.Kind + "/" + r.Name }

// configRefs lists the ConfigMaps and Secrets a pod spec references through volumes (also
// projected), envFrom and env valueFrom, in a stable order without duplicates. A reference is
// optional only when every use of it is optional.
func configRefs(spec *corev1.PodSpec) []configRef {
	seen := map[string]*configRef{}
	add := func(kind, name string, optional *bool) {
		if name == "" {
			return
		}
		opt := optional != nil && *optional
		key := kind + "/" + name
		if r, ok := seen[key]; ok {
			r.Optional = r.Optional && opt
			return
		}
		seen[key] = &configRef{Kind: kind, Name: name, Optional: opt}
	}
	for _, v := range spec.Volumes {
		if v.ConfigMap != nil {
			add(kindConfigMap, v.ConfigMap.Name, v.ConfigMap.Optional)
		}
		if v.Secret != nil {
			add(kindSecret, v.Secret.SecretName, v.Secret.Optional)
		}
		if v.Projected != nil {
			for _, s := range v.Projected.Sources {
				if s.ConfigMap != nil {
					add(kindConfigMap, s.ConfigMap.Name, s.ConfigMap.Optional)
				}
				if s.Secret != nil {
					add(kindSecret, s.Secret.Name, s.Secret.Optional)
				}
			}
		}
	}
	forContainers(spec, func(c *corev1.Container) {
		for _, e := range c.EnvFrom {
			if e.ConfigMapRef != nil {
				add(kindConfigMap, e.ConfigMapRef.Name, e.ConfigMapRef.Optional)
			}
			if e.SecretRef != nil {
				add(kindSecret, e.SecretRef.Name, e.SecretRef.Optional)
			}
		}
		for _, e := range c.Env {
			if e.ValueFrom == nil {
				continue
			}
			if r := e.ValueFrom.ConfigMapKeyRef; r != nil {
				add(kindConfigMap, r.Name, r.Optional)
			}
			if r := e.ValueFrom.SecretKeyRef; r != nil {
				add(kindSecret, r.Name, r.Optional)
			}
		}
	})
	out := make([]configRef, 0, len(seen))
	for _, r := range seen {
		out = append(out, *r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key() < out[j].Key() })
	return out
}

// renameConfigRefs rewrites every ConfigMap and Secret reference in spec through rename (which
// returns the new name for a kind and name).
func renameConfigRefs(spec *corev1.PodSpec, rename func(kind, name string) string) {
	for i := range spec.Volumes {
		v := &spec.Volumes[i]
		if v.ConfigMap != nil {
			v.ConfigMap.Name = rename(kindConfigMap, v.ConfigMap.Name)
		}
		if v.Secret != nil {
			v.Secret.SecretName = rename(kindSecret, v.Secret.SecretName)
		}
		if v.Projected != nil {
			for j := range v.Projected.Sources {
				s := &v.Projected.Sources[j]
				if s.ConfigMap != nil {
					s.ConfigMap.Name = rename(kindConfigMap, s.ConfigMap.Name)
				}
				if s.Secret != nil {
					s.Secret.Name = rename(kindSecret, s.Secret.Name)
				}
			}
		}
	}
	forContainers(spec, func(c *corev1.Container) {
		for j := range c.EnvFrom {
			if r := c.EnvFrom[j].ConfigMapRef; r != nil {
				r.Name = rename(kindConfigMap, r.Name)
			}
			if r := c.EnvFrom[j].SecretRef; r != nil {
				r.Name = rename(kindSecret, r.Name)
			}
		}
		for j := range c.Env {
			vf := c.Env[j].ValueFrom
			if vf == nil {
				continue
			}
			if vf.ConfigMapKeyRef != nil {
				vf.ConfigMapKeyRef.Name = rename(kindConfigMap, vf.ConfigMapKeyRef.Name)
			}
			if vf.SecretKeyRef != nil {
				vf.SecretKeyRef.Name = rename(kindSecret, vf.SecretKeyRef.Name)
			}
		}
	})
}

func forContainers(spec *corev1.PodSpec, f func(*corev1.Container)) {
	for i := range spec.InitContainers {
		f(&spec.InitContainers[i])
	}
	for i := range spec.Containers {
		f(&spec.Containers[i])
	}
}

// checksum is a short stable hash of any JSON-encodable value.
func checksum(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("checksum of unencodable value: %v", err))
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])[:16]
}

// configChecksum hashes a ConfigMap's or Secret's data (keys sorted by encoding/json).
func configChecksum(data map[string]string, binary map[string][]byte) string {
	return checksum(struct {
		Data   map[string]string `json:"d"`
		Binary map[string][]byte `json:"b"`
	}{data, binary})
}

// revisionOf is the revision of a pod template together with the checksums of its tracked
// configs: a change of either is a new revision. It is checksum's hash of
// {"t":<template>,"c":<tracked>}, computed in two halves (templateHashState, revisionFromState)
// so that the cache may keep the first and drop the template (workload_cache.go).
func revisionOf(template *corev1.PodTemplateSpec, tracked map[string]string) string {
	state, err := templateHashState(template)
	if err != nil {
		panic(fmt.Sprintf("revision of an unencodable template: %v", err))
	}
	rev, err := revisionFromState(state, tracked)
	if err != nil {
		panic(fmt.Sprintf("revision from a state just made: %v", err))
	}
	return rev
}
