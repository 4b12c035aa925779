package analysis

import (
	"testing"

	"github.com/shadoweval/shadoweval/config"
	"github.com/shadoweval/shadoweval/testenv"
)

// Every kind config validates has a judge, and the analyses judge no kind
// config would refuse.
func TestKindsMatchConfig(t *testing.T) {
	testenv.SameKeys(t, "the analyses judge check kinds", checkKinds, config.CheckKinds())
}
