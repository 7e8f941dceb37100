package convert_test

import (
	"os"
	"testing"

	"sluice.dev/sluice/test/testenv"
)

// env is the envtest control plane the dry runs go to; nil under -short.
var env *testenv.Env

func TestMain(m *testing.M) { os.Exit(testenv.Run(m, &env)) }
