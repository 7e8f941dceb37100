package testenv

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestFailedCRDInstallLeavesNoProcess: when the control plane starts but a CRD cannot be
// installed, Start returns the error and etcd and kube-apiserver are stopped, not leaked.
func TestFailedCRDInstallLeavesNoProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a control plane")
	}
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		t.Setenv("KUBEBUILDER_ASSETS", filepath.Join(RepoRoot(), "bin"))
	}
	dir := t.TempDir()
	// The apiserver refuses it: metadata.name must be <plural>.<group>.
	broken := `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: broken.example.com
spec:
  group: example.com
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget, listKind: WidgetList}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema: {type: object}
`
	if err := os.WriteFile(filepath.Join(dir, "broken.yaml"), []byte(broken), 0o600); err != nil {
		t.Fatal(err)
	}
	env, err := startWithCRDs([]string{dir})
	if err == nil {
		_ = env.Stop()
		t.Fatal("a CRD whose name is not <plural>.<group> was installed; want an error")
	}
	if !strings.Contains(err.Error(), "CRD") {
		t.Errorf("error %q does not name the CRD installation", err)
	}
	if left := childProcesses(t, "etcd", "kube-apiserver"); len(left) > 0 {
		t.Fatalf("control plane processes left running after the failed start: %v", left)
	}
}

// childProcesses lists this process's live children whose command is one of names.
func childProcesses(t *testing.T, names ...string) []string {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	self := strconv.Itoa(os.Getpid())
	var found []string
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// stat: pid (comm) state ppid ...; comm may hold spaces, so split after the last ')'.
		s := string(stat)
		open, closing := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
		if open < 0 || closing < 0 {
			continue
		}
		comm, rest := s[open+1:closing], strings.Fields(s[closing+1:])
		if len(rest) < 2 || rest[1] != self || rest[0] == "Z" {
			continue
		}
		for _, n := range names {
			if comm == n {
				found = append(found, e.Name()+" "+comm)
			}
		}
	}
	return found
}
