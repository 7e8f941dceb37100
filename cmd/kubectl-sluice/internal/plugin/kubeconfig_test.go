package plugin

import (
	"bytes"
	"context"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"sluice.dev/sluice/test/testenv"
)

// TestKubeconfigFlags runs the command line as main does, with the default Connect: the
// kubeconfig names the server, its context the namespace, and -n wins over it.
func TestKubeconfigFlags(t *testing.T) {
	testenv.Require(t, env)
	ns, other := env.Namespace(t), env.Namespace(t)
	newCanary(t, ns, "from-context", nil)
	newCanary(t, other, "from-flag", nil)

	cfg := env.Config
	kc := clientcmdapi.NewConfig()
	kc.Clusters["envtest"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos["admin"] = &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData, Token: cfg.BearerToken}
	kc.Contexts["test"] = &clientcmdapi.Context{Cluster: "envtest", AuthInfo: "admin", Namespace: ns}
	kc.CurrentContext = "test"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
	t.Setenv("KUBECONFIG", filepath.Join(t.TempDir(), "absent")) // --kubeconfig must win

	for args, want := range map[string]string{
		"get":                      "from-context",
		"get -n " + other:          "from-flag",
		"get --namespace=" + other: "from-flag",
	} {
		var out bytes.Buffer
		cmd := NewRootCommand(Options{Out: &out, ErrOut: io.Discard})
		cmd.SetArgs(append(strings.Fields(args), "--kubeconfig", path))
		if err := cmd.ExecuteContext(context.Background()); err != nil {
			t.Fatalf("%s: %v", args, err)
		}
		if !strings.Contains(out.String(), want) {
			t.Errorf("%s listed:\n%s\nwant %s", args, out.String(), want)
		}
	}
}
