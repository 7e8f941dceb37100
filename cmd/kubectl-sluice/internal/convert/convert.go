package convert

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

// Result is the outcome of a conversion.
type Result struct {
	// Objects are the Sluice objects (and the Secrets they need), in input order.
	Objects []client.Object
	Report  Report
}

// Convert reads Kubernetes manifests (YAML documents separated by ---, JSON, or a List such as
// `kubectl get -o yaml` prints) and converts every flagger.app/v1beta1 Canary, MetricTemplate and
// AlertProvider into its Sluice equivalent. Other objects are left out of the output and named in
// the report. errors: input that is not YAML or JSON, a document without apiVersion or kind.
func Convert(in io.Reader) (Result, error) {
	var res Result
	dec := utilyaml.NewYAMLOrJSONDecoder(in, 4096)
	for doc := 1; ; doc++ {
		var obj map[string]any
		if err := dec.Decode(&obj); err != nil {
			if errors.Is(err, io.EOF) {
				return res, nil
			}
			return res, fmt.Errorf("document %d: %w", doc, err)
		}
		if len(obj) == 0 {
			continue
		}
		if err := res.add(obj, fmt.Sprintf("document %d", doc)); err != nil {
			return res, err
		}
	}
}

// add converts one decoded object, or every item of a List.
func (res *Result) add(obj map[string]any, where string) error {
	apiVersion, _ := obj["apiVersion"].(string)
	kind, _ := obj["kind"].(string)
	if apiVersion == "" || kind == "" {
		return fmt.Errorf("%s: no apiVersion or kind", where)
	}
	if items, ok := obj["items"].([]any); ok && strings.HasSuffix(kind, "List") {
		for i, item := range items {
			m, ok := item.(map[string]any)
			if !ok {
				return fmt.Errorf("%s: items[%d] is not an object", where, i)
			}
			if err := res.add(m, fmt.Sprintf("%s items[%d]", where, i)); err != nil {
				return err
			}
		}
		return nil
	}
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return fmt.Errorf("%s: %w", where, err)
	}
	report := ObjectReport{Object: describe(kind, obj)}
	var out []client.Object
	switch {
	case gv.Group != flaggerGroup:
		report.add(Ignored, "apiVersion", "%s is not a Flagger object: left out of the output", apiVersion)
		res.Report.Skipped++
	case gv.Version != flaggerVersion:
		report.drop("apiVersion", "only %s/%s is converted: move the manifest to %s/%s first (Flagger converts it on the server)",
			flaggerGroup, flaggerVersion, flaggerGroup, flaggerVersion)
		res.Report.Skipped++
	default:
		if out, err = convertFlagger(kind, obj, &report); err != nil {
			return fmt.Errorf("%s: %s: %w", where, report.Object, err)
		}
		if len(out) == 0 {
			res.Report.Skipped++
		}
	}
	res.Objects = append(res.Objects, out...)
	res.Report.Converted += len(out)
	res.Report.Objects = append(res.Report.Objects, report)
	return nil
}

// convertFlagger dispatches on the kind. errors: an object that does not decode into Flagger's
// schema (a field of the wrong type).
func convertFlagger(kind string, obj map[string]any, r *ObjectReport) ([]client.Object, error) {
	switch kind {
	case "Canary":
		in := &fCanary{}
		if err := decodeInto(obj, in, r); err != nil {
			return nil, err
		}
		return convertCanary(in, r), nil
	case "MetricTemplate":
		in := &fMetricTemplate{}
		if err := decodeInto(obj, in, r); err != nil {
			return nil, err
		}
		return convertMetricTemplate(in, r), nil
	case "AlertProvider":
		in := &fAlertProvider{}
		if err := decodeInto(obj, in, r); err != nil {
			return nil, err
		}
		return convertAlertProvider(in, r), nil
	}
	r.drop("kind", "Flagger kind %s has no Sluice counterpart", kind)
	return nil, nil
}

// decodeInto decodes obj into typed and reports the input fields typed does not hold.
func decodeInto(obj map[string]any, typed any, r *ObjectReport) error {
	data, err := json.Marshal(obj)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(data, typed); err != nil {
		return fmt.Errorf("not a valid %s/%s object: %w", flaggerGroup, flaggerVersion, err)
	}
	for _, path := range unknownFields(obj, typed) {
		if path == "status" || strings.HasPrefix(path, "metadata.") {
			continue // reported by convertMeta and convertStatus
		}
		r.drop(path, "not a field of Flagger's %s schema", flaggerVersion)
	}
	return nil
}

// describe names an input object in the report: Kind namespace/name.
func describe(kind string, obj map[string]any) string {
	meta, _ := obj["metadata"].(map[string]any)
	name, _ := meta["name"].(string)
	if ns, _ := meta["namespace"].(string); ns != "" {
		name = ns + "/" + name
	}
	return kind + " " + name
}

// lastApplied is kubectl's record of the last applied manifest: state, not intent.
const lastApplied = "kubectl.kubernetes.io/last-applied-configuration"

// convertMeta keeps an object's name, namespace, labels and annotations, and reports the
// server-set fields it leaves out.
func convertMeta(in metav1.ObjectMeta, r *ObjectReport) metav1.ObjectMeta {
	out := metav1.ObjectMeta{Name: in.Name, Namespace: in.Namespace, GenerateName: in.GenerateName}
	if len(in.Labels) > 0 {
		out.Labels = maps.Clone(in.Labels)
	}
	if len(in.Annotations) > 0 {
		out.Annotations = maps.Clone(in.Annotations)
		if _, ok := out.Annotations[lastApplied]; ok {
			delete(out.Annotations, lastApplied)
			r.add(Ignored, "metadata.annotations."+lastApplied, "kubectl's record of the Flagger manifest")
		}
		if len(out.Annotations) == 0 {
			out.Annotations = nil
		}
	}
	var server []string
	for field, set := range map[string]bool{
		"uid": in.UID != "", "resourceVersion": in.ResourceVersion != "", "generation": in.Generation != 0,
		"creationTimestamp": !in.CreationTimestamp.IsZero(), "managedFields": len(in.ManagedFields) > 0,
		"selfLink": in.SelfLink != "", "deletionTimestamp": in.DeletionTimestamp != nil,
		"finalizers": len(in.Finalizers) > 0, "ownerReferences": len(in.OwnerReferences) > 0,
	} {
		if set {
			server = append(server, field)
		}
	}
	if len(server) > 0 {
		slices.Sort(server)
		r.add(Ignored, "metadata."+strings.Join(server, ", metadata."),
			"set by the apiserver or by Flagger for its own object")
	}
	return out
}

// convertStatus reports a status as ignored.
func convertStatus(status map[string]any, r *ObjectReport) {
	if len(status) > 0 {
		r.add(Ignored, "status", "written by the controller")
	}
}

// WriteYAML writes objs as YAML documents separated by ---, without status and without
// server-set metadata.
func WriteYAML(w io.Writer, objs []client.Object) error {
	var b bytes.Buffer
	for i, obj := range objs {
		data, err := json.Marshal(obj)
		if err != nil {
			return err
		}
		var m map[string]any
		if err := json.Unmarshal(data, &m); err != nil {
			return err
		}
		delete(m, "status")
		if meta, ok := m["metadata"].(map[string]any); ok {
			delete(meta, "creationTimestamp")
		}
		out, err := yaml.Marshal(m)
		if err != nil {
			return err
		}
		if i > 0 {
			b.WriteString("---\n")
		}
		b.Write(out)
	}
	_, err := w.Write(b.Bytes())
	return err
}
