package gates

import (
	"testing"

	"github.com/shadoweval/shadoweval/config"
	"github.com/shadoweval/shadoweval/testenv"
)

// Every kind config validates has a judge, and the engine judges no kind
// config would refuse.
func TestKindsMatchConfig(t *testing.T) {
	testenv.SameKeys(t, "the engine judges gate kinds", kinds, config.GateKinds())
}
