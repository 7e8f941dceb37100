// Package injector simulates Linkerd's proxy injector for tests and the demo: a mutating admission
// webhook served over HTTPS from the calling process and registered with a
// MutatingWebhookConfiguration for pod CREATE in namespaces labelled linkerd.io/inject=enabled.
//
// Each admitted pod gets a `linkerd-proxy` container with image cr.l5d.io/linkerd/proxy:VERSION and
// the annotation linkerd.io/proxy-version: VERSION, where VERSION is the pod's
// config.linkerd.io/proxy-version annotation, else its namespace's, else the control plane's.
// The injector follows the simulated control plane (test/controlplane): when the Deployment
// linkerd/linkerd-proxy-injector exists, its version is the default, and while it has no
// available replica the injector is down (it answers 503, and the apiserver applies the
// webhook's failurePolicy: Fail refuses the pod, Ignore creates it without the proxy). Without
// that Deployment the default is Options.Version (SetVersion changes it). Pods annotated
// linkerd.io/inject=disabled and pods that already have the proxy are left alone.
package injector

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// Linkerd's names, as documented by Linkerd (github.com/linkerd/linkerd2 is not importable here).
const (
	// LabelInject on a namespace selects it for injection (value InjectEnabled); as an annotation
	// on a pod with value InjectDisabled it opts the pod out.
	LabelInject    = "linkerd.io/inject"
	InjectEnabled  = "enabled"
	InjectDisabled = "disabled"
	// AnnotationProxyVersion is set on injected pods to the injected proxy's version.
	AnnotationProxyVersion = "linkerd.io/proxy-version"
	// AnnotationPinVersion on a pod or namespace pins the proxy version injected there.
	AnnotationPinVersion = "config.linkerd.io/proxy-version"
	// LabelControlPlaneNS is set on injected pods to the control plane's namespace.
	LabelControlPlaneNS = "linkerd.io/control-plane-ns"
	// ContainerName is the name of the injected proxy container.
	ContainerName = "linkerd-proxy"
	// ProxyImage is the injected image without its tag.
	ProxyImage = "cr.l5d.io/linkerd/proxy"
	// DefaultVersion is the default proxy version when Options.Version is empty.
	DefaultVersion = "stable-2.14.10"
	// DefaultName is the default name of the MutatingWebhookConfiguration.
	DefaultName = "linkerd-proxy-injector-sim"

	controlPlaneNamespace = "linkerd"
	mutatePath            = "/mutate"
)

// Options configure an Injector.
type Options struct {
	// Version is the initial default proxy version. Default DefaultVersion.
	Version string
	// Addr is the listen address. Default 127.0.0.1:0 (a free port).
	Addr string
	// Name of the MutatingWebhookConfiguration. Default DefaultName.
	Name string
	// Logf receives one line per admitted pod. Optional.
	Logf func(format string, args ...any)
	// FailurePolicy of the webhook: Fail (default) or Ignore.
	FailurePolicy admissionregistrationv1.FailurePolicyType
}

// TLS is the webhook's serving identity: Cert must be valid for the host of Addr (127.0.0.1) and
// signed by a CA in CABundle, which the apiserver uses to verify it.
type TLS struct {
	Cert     tls.Certificate
	CABundle []byte // PEM
}

// Injector is a running simulated proxy injector.
type Injector struct {
	opts    Options
	clients kubernetes.Interface
	srv     *http.Server
	url     string
	served  chan struct{}

	mu      sync.RWMutex
	version string
}

// New returns an injector that reads namespaces through clients, without serving or registering
// anything: use Handler in unit tests. Most callers want Start.
func New(clients kubernetes.Interface, opts Options) *Injector {
	if opts.Version == "" {
		opts.Version = DefaultVersion
	}
	if opts.Name == "" {
		opts.Name = DefaultName
	}
	if opts.Addr == "" {
		opts.Addr = "127.0.0.1:0"
	}
	if opts.Logf == nil {
		opts.Logf = func(string, ...any) {}
	}
	if opts.FailurePolicy == "" {
		opts.FailurePolicy = admissionregistrationv1.Fail
	}
	return &Injector{opts: opts, clients: clients, version: opts.Version, served: make(chan struct{})}
}

// Start serves the webhook over HTTPS and creates or updates its MutatingWebhookConfiguration
// through cfg (with Options.FailurePolicy: while the injector is down, pod creation in selected
// namespaces fails, or goes on without the proxy, as with a real injector that is unreachable).
// The server runs until Close.
// errors: listening, API errors.
func Start(ctx context.Context, cfg *rest.Config, id TLS, opts Options) (*Injector, error) {
	clients, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	in := New(clients, opts)
	ln, err := net.Listen("tcp", in.opts.Addr)
	if err != nil {
		return nil, fmt.Errorf("injector: %w", err)
	}
	in.url = "https://" + ln.Addr().String() + mutatePath
	in.srv = &http.Server{
		Handler:           in.Handler(),
		TLSConfig:         &tls.Config{Certificates: []tls.Certificate{id.Cert}, MinVersion: tls.VersionTLS12},
		ReadHeaderTimeout: 10 * time.Second,
	}
	go func() {
		defer close(in.served)
		if err := in.srv.ServeTLS(ln, "", ""); err != nil && !errors.Is(err, http.ErrServerClosed) {
			in.opts.Logf("injector: serving: %v", err)
		}
	}()
	if err := in.register(ctx, id.CABundle); err != nil {
		_ = in.Close()
		return nil, err
	}
	return in, nil
}

// URL is the webhook's address (https://127.0.0.1:PORT/mutate); empty for an injector from New.
func (in *Injector) URL() string { return in.url }

// Version returns the current default proxy version.
func (in *Injector) Version() string {
	in.mu.RLock()
	defer in.mu.RUnlock()
	return in.version
}

// SetVersion changes the default proxy version for pods admitted from now on.
func (in *Injector) SetVersion(v string) {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.version = v
}

// Close stops the server. The MutatingWebhookConfiguration stays registered.
func (in *Injector) Close() error {
	if in.srv == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := in.srv.Shutdown(ctx)
	<-in.served
	return err
}

func (in *Injector) register(ctx context.Context, caBundle []byte) error {
	fail := in.opts.FailurePolicy
	none := admissionregistrationv1.SideEffectClassNone
	scope := admissionregistrationv1.NamespacedScope
	timeout := int32(5)
	want := &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: in.opts.Name},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{
			Name:                    "linkerd-proxy-injector.linkerd.io",
			AdmissionReviewVersions: []string{"v1"},
			SideEffects:             &none,
			FailurePolicy:           &fail,
			TimeoutSeconds:          &timeout,
			ClientConfig:            admissionregistrationv1.WebhookClientConfig{URL: &in.url, CABundle: caBundle},
			NamespaceSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{LabelInject: InjectEnabled}},
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
				Rule: admissionregistrationv1.Rule{
					APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}, Scope: &scope,
				},
			}},
		}},
	}
	api := in.clients.AdmissionregistrationV1().MutatingWebhookConfigurations()
	got, err := api.Get(ctx, want.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		_, err = api.Create(ctx, want, metav1.CreateOptions{})
	case err == nil:
		want.ResourceVersion = got.ResourceVersion
		_, err = api.Update(ctx, want, metav1.UpdateOptions{})
	}
	if err != nil {
		return fmt.Errorf("registering MutatingWebhookConfiguration %s: %w", want.Name, err)
	}
	return nil
}

// Handler serves POST /mutate (AdmissionReview v1) and GET /healthz.
func (in *Injector) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") })
	mux.HandleFunc("POST "+mutatePath, in.serveMutate)
	return mux
}

func (in *Injector) serveMutate(w http.ResponseWriter, r *http.Request) {
	var review admissionv1.AdmissionReview
	if err := json.NewDecoder(io.LimitReader(r.Body, 8<<20)).Decode(&review); err != nil || review.Request == nil {
		http.Error(w, "expected an AdmissionReview with a request", http.StatusBadRequest)
		return
	}
	if ok, why := in.up(r.Context()); !ok {
		http.Error(w, why, http.StatusServiceUnavailable)
		return
	}
	resp := in.admit(r.Context(), review.Request)
	resp.UID = review.Request.UID
	out := admissionv1.AdmissionReview{TypeMeta: review.TypeMeta, Response: resp}
	if out.APIVersion == "" {
		out.APIVersion, out.Kind = admissionv1.SchemeGroupVersion.String(), "AdmissionReview"
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(out)
}

// patchOp is one RFC 6902 JSON patch operation.
type patchOp struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value,omitempty"`
}

func (in *Injector) admit(ctx context.Context, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
	allow := &admissionv1.AdmissionResponse{Allowed: true}
	if req.Kind.Kind != "Pod" || req.Operation != admissionv1.Create {
		return allow
	}
	var pod corev1.Pod
	if err := json.Unmarshal(req.Object.Raw, &pod); err != nil {
		return deny(http.StatusBadRequest, fmt.Sprintf("decoding pod: %v", err))
	}
	name := pod.Name
	if name == "" {
		name = pod.GenerateName + "*"
	}
	if pod.Annotations[LabelInject] == InjectDisabled {
		in.opts.Logf("injector: %s/%s: skipped (%s=%s)", req.Namespace, name, LabelInject, InjectDisabled)
		return allow
	}
	for _, c := range pod.Spec.Containers {
		if c.Name == ContainerName {
			return allow
		}
	}
	version, err := in.versionFor(ctx, req.Namespace, &pod)
	if err != nil {
		return deny(http.StatusInternalServerError, err.Error())
	}
	var ops []patchOp
	if pod.Annotations == nil {
		ops = append(ops, patchOp{Op: "add", Path: "/metadata/annotations", Value: map[string]string{}})
	}
	if pod.Labels == nil {
		ops = append(ops, patchOp{Op: "add", Path: "/metadata/labels", Value: map[string]string{}})
	}
	ops = append(ops,
		patchOp{Op: "add", Path: "/metadata/annotations/" + escape(AnnotationProxyVersion), Value: version},
		patchOp{Op: "add", Path: "/metadata/labels/" + escape(LabelControlPlaneNS), Value: controlPlaneNamespace},
		patchOp{Op: "add", Path: "/spec/containers/-", Value: corev1.Container{
			Name:  ContainerName,
			Image: ProxyImage + ":" + version,
			Ports: []corev1.ContainerPort{
				{Name: "linkerd-proxy", ContainerPort: 4143},
				{Name: "linkerd-admin", ContainerPort: 4191},
			},
		}},
	)
	patch, err := json.Marshal(ops)
	if err != nil {
		return deny(http.StatusInternalServerError, err.Error())
	}
	in.opts.Logf("injector: %s/%s: injected %s:%s", req.Namespace, name, ProxyImage, version)
	pt := admissionv1.PatchTypeJSONPatch
	return &admissionv1.AdmissionResponse{Allowed: true, PatchType: &pt, Patch: patch}
}

// controlPlaneInjector is the simulated control plane's proxy-injector Deployment.
const controlPlaneInjector = "linkerd-proxy-injector"

// up reports whether the injector serves: always without a simulated control plane, else while
// its proxy-injector Deployment has an available replica.
func (in *Injector) up(ctx context.Context) (bool, string) {
	d, err := in.clients.AppsV1().Deployments(controlPlaneNamespace).Get(ctx, controlPlaneInjector, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return true, ""
	case err != nil:
		return false, err.Error()
	case d.Spec.Replicas != nil && *d.Spec.Replicas == 0, d.Status.AvailableReplicas == 0:
		return false, fmt.Sprintf("proxy injector %s/%s has no available replica", controlPlaneNamespace, controlPlaneInjector)
	}
	return true, ""
}

// defaultVersion is the control plane's version (its proxy-injector's template), else the
// injector's own default.
func (in *Injector) defaultVersion(ctx context.Context) (string, error) {
	d, err := in.clients.AppsV1().Deployments(controlPlaneNamespace).Get(ctx, controlPlaneInjector, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return in.Version(), nil
	case err != nil:
		return "", fmt.Errorf("reading the proxy injector: %w", err)
	}
	if v := d.Spec.Template.Annotations[AnnotationProxyVersion]; v != "" {
		return v, nil
	}
	return in.Version(), nil
}

// versionFor returns the pod's pinned version, else its namespace's, else the default.
func (in *Injector) versionFor(ctx context.Context, namespace string, pod *corev1.Pod) (string, error) {
	if v := pod.Annotations[AnnotationPinVersion]; v != "" {
		return v, nil
	}
	ns, err := in.clients.CoreV1().Namespaces().Get(ctx, namespace, metav1.GetOptions{})
	if err != nil {
		return "", fmt.Errorf("reading namespace %s: %w", namespace, err)
	}
	if v := ns.Annotations[AnnotationPinVersion]; v != "" {
		return v, nil
	}
	return in.defaultVersion(ctx)
}

func deny(code int32, msg string) *admissionv1.AdmissionResponse {
	return &admissionv1.AdmissionResponse{Allowed: false, Result: &metav1.Status{
		Status: metav1.StatusFailure, Code: code, Message: msg,
	}}
}

// escape encodes a map key as a JSON pointer token (RFC 6901).
func escape(key string) string {
	return strings.NewReplacer("~", "~0", "/", "~1").Replace(key)
}
