package rollouts

import (
	"os"
	"strings"
	"testing"
)

// The YAML these tests run through Argo Rollouts' and Flagger's code is the
// YAML the README gives users, to the byte.
func TestReadmeCarriesTheTestedYAML(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	for name, block := range map[string]string{
		"AnalysisTemplate": readmeAnalysisTemplate,
		"Rollout":          readmeRollout,
		"Flagger Canary":   readmeCanary,
	} {
		if !strings.Contains(string(readme), "```yaml\n"+block+"```\n") {
			t.Errorf("README.md does not carry the tested %s:\n%s", name, block)
		}
	}
}
