// Package testenv starts a real kube-apiserver and etcd (controller-runtime envtest) with Sluice's
// CRDs, the Gateway API standard CRDs and the Istio CRDs installed, for every test package that
// talks to Kubernetes.
//
// The binaries come from bin/ (built by hack/build-tools.sh from pinned Go modules); the Gateway API
// and Istio CRDs are read from their Go modules' folders as `go list -m -f {{.Dir}}` reports them,
// so they always match the versions in go.mod; CRDs of projects Sluice has no Go dependency on
// (KEDA's ScaledObject) are vendored in crds/, each naming its source.
package testenv

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"sluice.dev/sluice/controllers/scheme"
)

// Env is a running test control plane.
type Env struct {
	// Config reaches the apiserver as a cluster admin.
	Config *rest.Config
	// Client is a direct (uncached) client with Scheme.
	Client client.Client
	// Scheme knows the core, Sluice, Gateway API and Istio networking types.
	Scheme *runtime.Scheme

	env *envtest.Environment
}

// RepoRoot is the absolute path of the repository (the folder holding go.mod).
func RepoRoot() string {
	_, file, _, _ := goruntime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

// NewScheme returns the scheme of every Sluice binary (see controllers/scheme).
func NewScheme() *runtime.Scheme { return scheme.New() }

// CRDPaths lists the CRD files and folders installed into every test apiserver: Sluice's
// config/crd, Gateway API's config/crd/standard, Istio's customresourcedefinitions.gen.yaml and
// the third-party CRDs vendored in test/testenv/crds (KEDA's ScaledObject; each file names its
// source).
// errors: the go command failing to locate a module.
func CRDPaths() ([]string, error) {
	root := RepoRoot()
	gwDir, err := moduleDir(root, "sigs.k8s.io/gateway-api")
	if err != nil {
		return nil, err
	}
	istioDir, err := moduleDir(root, "istio.io/api")
	if err != nil {
		return nil, err
	}
	return []string{
		filepath.Join(root, "config", "crd"),
		filepath.Join(gwDir, "config", "crd", "standard"),
		filepath.Join(istioDir, "kubernetes", "customresourcedefinitions.gen.yaml"),
		filepath.Join(root, "test", "testenv", "crds"),
	}, nil
}

func moduleDir(root, module string) (string, error) {
	cmd := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", module)
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("locating module %s: %w", module, err)
	}
	dir := strings.TrimSpace(string(out))
	if dir == "" {
		return "", fmt.Errorf("module %s has no folder; run go mod download", module)
	}
	return dir, nil
}

// Start launches etcd and kube-apiserver with all CRDs installed. Binaries come from
// $KUBEBUILDER_ASSETS, or bin/ of the repository when it is unset.
// errors: missing binaries (run `make tools`), a control plane that does not come up.
func Start() (*Env, error) {
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		if err := os.Setenv("KUBEBUILDER_ASSETS", filepath.Join(RepoRoot(), "bin")); err != nil {
			return nil, err
		}
	}
	for _, b := range []string{"etcd", "kube-apiserver"} {
		if _, err := os.Stat(filepath.Join(os.Getenv("KUBEBUILDER_ASSETS"), b)); err != nil {
			return nil, fmt.Errorf("test control plane binary %s missing (run `make tools`): %w", b, err)
		}
	}
	paths, err := CRDPaths()
	if err != nil {
		return nil, err
	}
	return startWithCRDs(paths)
}

// startWithCRDs starts etcd and kube-apiserver and installs the CRDs found in paths.
func startWithCRDs(paths []string) (*Env, error) {
	scheme := NewScheme()
	env := &envtest.Environment{
		CRDDirectoryPaths:        paths,
		ErrorIfCRDPathMissing:    true,
		Scheme:                   scheme,
		ControlPlaneStartTimeout: 90 * time.Second,
		ControlPlaneStopTimeout:  30 * time.Second,
	}
	// envtest's default /24 Service range runs out at ~84 Canaries (3 Services each).
	env.ControlPlane.GetAPIServer().Configure().Set("service-cluster-ip-range", "10.0.0.0/16")
	cfg, err := env.Start()
	if err != nil {
		// envtest returns without stopping etcd and kube-apiserver when a later step (CRD
		// installation) fails; stop whatever did start so no process outlives the test binary.
		if stopErr := env.Stop(); stopErr != nil {
			err = errors.Join(err, fmt.Errorf("stopping the partly started control plane: %w", stopErr))
		}
		return nil, fmt.Errorf("starting envtest: %w", err)
	}
	// Many reconcilers and test clients share one apiserver: lift client-side throttling.
	cfg.QPS, cfg.Burst = 500, 1000
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		_ = env.Stop()
		return nil, fmt.Errorf("creating client: %w", err)
	}
	return &Env{Config: cfg, Client: c, Scheme: scheme, env: env}, nil
}

// Stop stops the control plane; errors: processes that would not stop.
func (e *Env) Stop() error {
	if e == nil || e.env == nil {
		return nil
	}
	return e.env.Stop()
}

// Run is a TestMain helper: it starts an Env, stores it in *env, runs the tests and stops it.
// Under `go test -short` it runs the tests without a control plane and leaves *env nil; tests
// that need it call Require.
func Run(m *testing.M, env **Env) int {
	flag.Parse()
	if testing.Short() {
		return m.Run()
	}
	e, err := Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	*env = e
	code := m.Run()
	if err := e.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "stopping envtest:", err)
	}
	return code
}

// Require skips the test when no control plane was started (go test -short).
func Require(t testing.TB, env *Env) {
	t.Helper()
	if env == nil {
		t.Skip("needs the envtest control plane (not started under -short)")
	}
}

// Namespace creates a fresh namespace named after the test and returns its name.
func (e *Env) Namespace(t testing.TB) string {
	t.Helper()
	name := strings.ToLower(strings.NewReplacer("/", "-", "_", "-", ".", "-").Replace(t.Name()))
	if len(name) > 50 {
		name = name[:50]
	}
	prefix := strings.Trim(name, "-")
	// Subtests whose names agree on the first 50 characters share the prefix; a suffix that
	// collides (1 in 100000 per pair) is drawn again rather than failing the test.
	for attempt := 0; ; attempt++ {
		name = prefix + fmt.Sprintf("-%d", time.Now().UnixNano()%100000)
		ns := &corev1.Namespace{}
		ns.Name = name
		err := e.Client.Create(context.Background(), ns)
		if err == nil {
			return name
		}
		if !apierrors.IsAlreadyExists(err) || attempt == 4 {
			t.Fatalf("creating namespace %s: %v", name, err)
		}
	}
}
