package scale

import (
	"flag"
	"fmt"
	"os"
	"testing"

	"github.com/go-logr/logr"
	"go.uber.org/zap/zapcore"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"sluice.dev/sluice/test/testenv"
)

var env *testenv.Env

// TestMain starts the shared control plane (testenv's Service range is large enough for 500
// Canaries, 3 Services each). It discards the manager's log (500 Canaries log every creation and
// transition), or writes it at debug level to the file $SCALE_LOG names.
func TestMain(m *testing.M) {
	flag.Parse()
	logger := logr.Discard()
	if path := os.Getenv("SCALE_LOG"); path != "" {
		f, err := os.Create(path)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		logger = zap.New(zap.WriteTo(f), zap.Level(zapcore.DebugLevel))
	}
	log.SetLogger(logger)
	os.Exit(testenv.Run(m, &env))
}
