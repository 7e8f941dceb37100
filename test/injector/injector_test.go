package injector

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
)

// review sends pod through the handler as a CREATE AdmissionReview and returns the response and
// the patched pod.
func review(t *testing.T, in *Injector, pod *corev1.Pod) (*admissionv1.AdmissionResponse, *corev1.Pod) {
	t.Helper()
	raw, err := json.Marshal(pod)
	if err != nil {
		t.Fatal(err)
	}
	req := admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request: &admissionv1.AdmissionRequest{
			UID:       "uid-1",
			Kind:      metav1.GroupVersionKind{Version: "v1", Kind: "Pod"},
			Namespace: pod.Namespace,
			Operation: admissionv1.Create,
			Object:    runtime.RawExtension{Raw: raw},
		},
	}
	body, _ := json.Marshal(req)
	rec := httptest.NewRecorder()
	in.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/mutate", bytes.NewReader(body)))
	if rec.Code != http.StatusOK {
		t.Fatalf("status %d: %s", rec.Code, rec.Body)
	}
	var out admissionv1.AdmissionReview
	if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil {
		t.Fatal(err)
	}
	if out.Response == nil || out.Response.UID != "uid-1" || out.Kind != "AdmissionReview" {
		t.Fatalf("bad review response %+v", out)
	}
	patched := pod.DeepCopy()
	if len(out.Response.Patch) > 0 {
		p, err := jsonpatch.DecodePatch(out.Response.Patch)
		if err != nil {
			t.Fatal(err)
		}
		applied, err := p.Apply(raw)
		if err != nil {
			t.Fatalf("applying %s: %v", out.Response.Patch, err)
		}
		patched = &corev1.Pod{}
		if err := json.Unmarshal(applied, patched); err != nil {
			t.Fatal(err)
		}
	}
	return out.Response, patched
}

func proxyOf(p *corev1.Pod) (image, version string) {
	for _, c := range p.Spec.Containers {
		if c.Name == ContainerName {
			image = c.Image
		}
	}
	return image, p.Annotations[AnnotationProxyVersion]
}

func TestInjectionVersions(t *testing.T) {
	clients := fake.NewClientset(
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "meshed"}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "pinned",
			Annotations: map[string]string{AnnotationPinVersion: "stable-2.13.0"}}},
	)
	in := New(clients, Options{Logf: t.Logf})
	pod := func(ns string, annotations map[string]string, containers ...string) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{GenerateName: "web-", Namespace: ns, Annotations: annotations}}
		for _, c := range append([]string{"app"}, containers...) {
			p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: c, Image: "example.com/" + c})
		}
		return p
	}
	for _, tc := range []struct {
		name    string
		pod     *corev1.Pod
		setTo   string
		version string // "" = not injected
	}{
		{name: "default", pod: pod("meshed", nil), version: DefaultVersion},
		{name: "after SetVersion", pod: pod("meshed", map[string]string{"a": "b"}), setTo: "edge-25.1.1", version: "edge-25.1.1"},
		{name: "namespace pin", pod: pod("pinned", nil), version: "stable-2.13.0"},
		{name: "pod pin beats namespace pin", pod: pod("pinned", map[string]string{AnnotationPinVersion: "stable-2.12.0"}), version: "stable-2.12.0"},
		{name: "opted out", pod: pod("meshed", map[string]string{LabelInject: InjectDisabled})},
		{name: "already injected", pod: pod("meshed", nil, ContainerName)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.setTo != "" {
				in.SetVersion(tc.setTo)
			}
			resp, got := review(t, in, tc.pod)
			if !resp.Allowed {
				t.Fatalf("denied: %v", resp.Result)
			}
			image, version := proxyOf(got)
			if tc.version == "" {
				if len(resp.Patch) > 0 {
					t.Errorf("patched %s, want no change", resp.Patch)
				}
				return
			}
			if image != ProxyImage+":"+tc.version || version != tc.version {
				t.Errorf("proxy image %q annotation %q, want version %s", image, version, tc.version)
			}
			if got.Labels[LabelControlPlaneNS] != controlPlaneNamespace || got.Spec.Containers[0].Name != "app" {
				t.Errorf("patched pod %+v", got)
			}
			if tc.pod.Annotations["a"] != "" && got.Annotations["a"] != "b" {
				t.Errorf("existing annotations lost: %v", got.Annotations)
			}
		})
	}
}
