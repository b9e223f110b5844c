package deploy

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/lambent/lambent/internal/testing/lambdarun"
)

// The Lambda builds (make build's and SAM's tags; tool Lambdas also leave
// net/http's HTTP/2 out, tag nethttpomithttp2) link neither the
// Prometheus client (local /metrics only; in Lambda metrics are EMF) nor
// gRPC (OpenTelemetry's OTLP exporter, replaced by pkg/telemetry's own
// OTLP/JSON one), which cost megabytes of bootstrap and milliseconds of
// package initialisation on every cold start (docs/aws.md), nor the SDK's
// SSM, Secrets Manager, SQS, EventBridge and Lambda clients (pkg/awsjson
// makes those calls instead), nor the SDK's config package and the credential
// sources it links (awsconf.FromEnvironment reads what Lambda sets); tool
// Lambdas link neither pkg/api nor its JSON library.
func TestLambdaBuildsLeaveOutWhatTheyDoNotUse(t *testing.T) {
	t.Parallel()
	deps := func(tags string, pkgs ...string) string {
		t.Helper()
		cmd := exec.Command("go", append([]string{"list", "-tags", tags, "-deps"}, pkgs...)...)
		cmd.Dir = ".."
		cmd.Env = append(cmd.Environ(), "GOOS=linux", "GOARCH=arm64", "CGO_ENABLED=0")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("go list: %v\n%s", err, out)
		}
		return string(out)
	}
	const lambdaTags = "lambda.norpc,lambent_lambda"
	engines := deps(lambdaTags, "./functions/gateway", "./functions/worker", "./functions/websocket")
	for _, banned := range []string{"github.com/prometheus/", "google.golang.org/grpc", "go.opentelemetry.io/otel/exporters/otlp", "html/template",
		"github.com/aws/aws-sdk-go-v2/service/ssm", "github.com/aws/aws-sdk-go-v2/service/secretsmanager",
		"github.com/aws/aws-sdk-go-v2/service/sqs", "github.com/aws/aws-sdk-go-v2/service/eventbridge", "github.com/aws/aws-sdk-go-v2/service/lambda",
		"github.com/aws/aws-sdk-go-v2/config\n", "github.com/aws/aws-sdk-go-v2/service/sts", "github.com/aws/aws-sdk-go-v2/service/sso", "github.com/aws/aws-sdk-go-v2/feature/ec2/imds"} {
		if strings.Contains(engines, banned) {
			t.Errorf("a Lambda build of the engine functions links %s", strings.TrimSpace(banned))
		}
	}
	toolDeps := deps(lambdarun.Tags("./functions/tools/fetch_url"), "./functions/tools/calculator", "./functions/tools/fetch_url")
	// nethttpomithttp2 leaves out net/http's HTTP/2, and with it hpack.
	for _, banned := range []string{"github.com/lambent/lambent/pkg/api\n", "github.com/segmentio/encoding", "golang.org/x/net/http2/hpack"} {
		if strings.Contains(toolDeps, banned) {
			t.Errorf("a tool Lambda links %s", strings.TrimSpace(banned))
		}
	}
	local := deps("lambda.norpc", "./functions/gateway")
	if !strings.Contains(local, "github.com/prometheus/client_golang/prometheus\n") {
		t.Error("the local build of the gateway lost Prometheus (/metrics)")
	}
	if !strings.Contains(local, "github.com/aws/aws-sdk-go-v2/config\n") {
		t.Error("the local build of the gateway lost the SDK's default configuration chain (profiles, SSO)")
	}
	for _, f := range []string{"../Makefile", "../mk/sam.mk"} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, tags := range []string{lambdaTags, lambdarun.Tags("./functions/tools/fetch_url")} {
			if !strings.Contains(string(b), "-tags "+tags+" ") {
				t.Errorf("%s does not build with -tags %s", f, tags)
			}
		}
	}
}
