package stack

import (
	"bytes"
	"context"
	"embed"
	"errors"
	"fmt"
	"io"
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

//go:embed manifests/*.yaml
var manifests embed.FS

// DemoNamespace, DemoApp: the namespace and name of the demo app, its Canary and apex Service.
const (
	DemoNamespace = "demo"
	DemoApp       = "podinfo"
)

// ApplyDemoApp creates the demo app of manifests/podinfo.yaml: ConfigMap, Deployment, Service,
// HTTPRoute (Service parentRef) and Canary. errors: objects the apiserver rejects.
func (s *Stack) ApplyDemoApp(ctx context.Context) error {
	data, err := manifests.ReadFile("manifests/podinfo.yaml")
	if err != nil {
		return err
	}
	return s.Apply(ctx, data)
}

// ApplyDemoAppWithout creates the demo app's objects except those of the given kinds (e.g.
// "Canary", to have the app serve before a Canary adopts it).
func (s *Stack) ApplyDemoAppWithout(ctx context.Context, kinds ...string) error {
	data, err := manifests.ReadFile("manifests/podinfo.yaml")
	if err != nil {
		return err
	}
	return s.apply(ctx, data, func(u *unstructured.Unstructured) bool { return !slices.Contains(kinds, u.GetKind()) })
}

// ApplyDemoCanary creates only the demo app's Canary.
func (s *Stack) ApplyDemoCanary(ctx context.Context) error {
	data, err := manifests.ReadFile("manifests/podinfo.yaml")
	if err != nil {
		return err
	}
	return s.apply(ctx, data, func(u *unstructured.Unstructured) bool { return u.GetKind() == "Canary" })
}

// Apply creates every object of a multi-document YAML. errors: decoding, creation.
func (s *Stack) Apply(ctx context.Context, yamlDocs []byte) error {
	return s.apply(ctx, yamlDocs, func(*unstructured.Unstructured) bool { return true })
}

func (s *Stack) apply(ctx context.Context, yamlDocs []byte, include func(*unstructured.Unstructured) bool) error {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(yamlDocs), 4096)
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return fmt.Errorf("decoding manifest: %w", err)
		}
		if len(u.Object) == 0 || !include(u) {
			continue
		}
		if err := s.Client.Create(ctx, u); client.IgnoreAlreadyExists(err) != nil {
			return fmt.Errorf("creating %s %s/%s: %w", u.GetKind(), u.GetNamespace(), u.GetName(), err)
		}
	}
}
