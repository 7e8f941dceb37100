package chart

import (
	"os"
	"testing"

	"sluice.dev/sluice/test/testenv"
)

// env is the envtest control plane of this package's tests; nil under -short.
var env *testenv.Env

func TestMain(m *testing.M) { os.Exit(testenv.Run(m, &env)) }
