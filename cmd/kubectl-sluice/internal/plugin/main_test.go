package plugin

import (
	"flag"
	"os"
	"testing"

	"sluice.dev/sluice/test/testenv"
)

// env is the envtest control plane of this package's tests; nil under -short.
var env *testenv.Env

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

func TestMain(m *testing.M) {
	code := testenv.Run(m, &env)
	stopBrowser()
	os.Exit(code)
}
