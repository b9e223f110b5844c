package lambdatool_test

import (
	"bytes"
	"os/exec"
	"strings"
	"testing"
)

// TestLinksNoAWSClient keeps tool functions small: the package tool
// authors import, and every tool function built with it, link no AWS SDK
// client (the gateway's Lambda client lives in package lambdaexec).
func TestLinksNoAWSClient(t *testing.T) {
	cmd := exec.Command("go", "list", "-deps", "github.com/lambent/lambent/pkg/tools/lambdatool", "github.com/lambent/lambent/functions/tools/...")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, stderr.String())
	}
	deps := strings.Fields(string(out))
	if len(deps) == 0 {
		t.Fatal("go list -deps listed nothing")
	}
	for _, dep := range deps {
		if strings.HasPrefix(dep, "github.com/aws/aws-sdk-go-v2") || strings.HasPrefix(dep, "github.com/aws/smithy-go") {
			t.Errorf("a tool function links %s", dep)
		}
	}
}
