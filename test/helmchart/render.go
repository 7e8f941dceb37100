// Package helmchart renders the Sluice Helm chart (charts/sluice) with Helm's Go library, the way
// `helm template` does, for tests that need what the chart installs: server-side dry runs on the
// envtest apiserver, or the manager running with only the chart's RBAC.
package helmchart

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"path"
	"path/filepath"
	goruntime "runtime"
	"sort"
	"strings"

	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// Dir is the chart's folder, charts/sluice.
func Dir() string {
	_, file, _, _ := goruntime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "charts", "sluice")
}

// Release names a release of the chart and its values.
type Release struct {
	// Name of the release; default "sluice".
	Name string
	// Namespace of the release; default "sluice-system".
	Namespace string
	// Values override values.yaml (nested maps, as `--set`/`-f` would give them).
	Values map[string]any
}

// Rendered is what an install of the chart would create.
type Rendered struct {
	// Objects in install order (CRDs, ServiceAccount, RBAC, Service, Deployment, ...), and by
	// name within a kind.
	Objects []*unstructured.Unstructured
	// Notes is the rendered NOTES.txt.
	Notes string
}

// Render renders the chart for r: values.yaml merged with r.Values and validated against
// values.schema.json, then every template, split into objects.
// errors: values the schema rejects, a template failing (including the chart's own `fail`
// checks), output that is not Kubernetes YAML.
func Render(r Release) (*Rendered, error) {
	if r.Name == "" {
		r.Name = "sluice"
	}
	if r.Namespace == "" {
		r.Namespace = "sluice-system"
	}
	ch, err := loader.Load(Dir())
	if err != nil {
		return nil, fmt.Errorf("loading chart: %w", err)
	}
	vals, err := chartutil.ToRenderValues(ch, r.Values,
		chartutil.ReleaseOptions{Name: r.Name, Namespace: r.Namespace, Revision: 1, IsInstall: true}, nil)
	if err != nil {
		return nil, err
	}
	files, err := engine.Render(ch, vals)
	if err != nil {
		return nil, fmt.Errorf("rendering chart: %w", err)
	}
	out := &Rendered{}
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		base := path.Base(name)
		switch {
		case base == "NOTES.txt":
			out.Notes = files[name]
			continue
		case strings.HasPrefix(base, "_") || !(strings.HasSuffix(base, ".yaml") || strings.HasSuffix(base, ".yml")):
			continue
		}
		objs, err := Decode(files[name])
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		out.Objects = append(out.Objects, objs...)
	}
	sort.SliceStable(out.Objects, func(i, j int) bool {
		a, b := out.Objects[i], out.Objects[j]
		if ka, kb := kindRank(a.GetKind()), kindRank(b.GetKind()); ka != kb {
			return ka < kb
		}
		return a.GetNamespace()+"/"+a.GetName() < b.GetNamespace()+"/"+b.GetName()
	})
	return out, nil
}

// Find returns the rendered object of kind and name, or nil.
func (r *Rendered) Find(kind, name string) *unstructured.Unstructured {
	for _, o := range r.Objects {
		if o.GetKind() == kind && o.GetName() == name {
			return o
		}
	}
	return nil
}

// OfKind returns the rendered objects of kind.
func (r *Rendered) OfKind(kind string) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, o := range r.Objects {
		if o.GetKind() == kind {
			out = append(out, o)
		}
	}
	return out
}

// Decode splits a multi-document manifest into objects, skipping empty documents.
func Decode(manifest string) ([]*unstructured.Unstructured, error) {
	var out []*unstructured.Unstructured
	docs := utilyaml.NewYAMLReader(bufio.NewReader(strings.NewReader(manifest)))
	for {
		doc, err := docs.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		j, err := yaml.YAMLToJSON(doc)
		if err != nil {
			return nil, err
		}
		if t := bytes.TrimSpace(j); len(t) == 0 || string(t) == "null" || string(t) == "{}" {
			continue // an empty document: a template whose condition was false
		}
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(j); err != nil { // numbers become int64, as from the apiserver
			return nil, err
		}
		out = append(out, u)
	}
}

// installOrder is Helm's install order for the kinds the chart renders.
var installOrder = []string{
	"CustomResourceDefinition", "ServiceAccount", "ConfigMap", "ClusterRole", "ClusterRoleBinding",
	"Role", "RoleBinding", "Service", "Deployment", "PodDisruptionBudget",
}

func kindRank(kind string) int {
	for i, k := range installOrder {
		if k == kind {
			return i
		}
	}
	return len(installOrder)
}
