package deploy

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
)

// notOnRestAPI are the gateway's routes the REST API leaves out: the
// WebSocket upgrade of GET /v1/responses (API Gateway's WebSocket API
// serves WebSocket mode) and the health check, outside /v1.
var notOnRestAPI = []string{"GET /v1/responses", "GET /healthz"}

// appRoutes returns the patterns of the gateway's routes (pkg/httpapi's
// routes()) as API Gateway names them: a wildcard matching the rest of the
// path, {name...}, is the greedy path variable {name+}.
func appRoutes(t *testing.T) []string {
	t.Helper()
	src, err := os.ReadFile(filepath.Join(root, "pkg", "httpapi", "routes.go"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, m := range regexp.MustCompile(`pattern: "([A-Z]+ /[^"]*)"`).FindAllStringSubmatch(string(src), -1) {
		out = append(out, regexp.MustCompile(`\{(\w+)\.\.\.\}`).ReplaceAllString(m[1], "{$1+}"))
	}
	if len(out) == 0 {
		t.Fatal("no route patterns found in pkg/httpapi/routes.go")
	}
	return out
}

// TestRestAPIServesTheAppRoutes: every route the gateway serves (on the
// function URL and locally) is a method of the REST API too, so the SDKs'
// calls work on either front door; a route the API lacks is API Gateway's
// 403 MissingAuthenticationToken ("Missing Authentication Token"), not
// the gateway's answer.
func TestRestAPIServesTheAppRoutes(t *testing.T) {
	tpl := loadTemplate(t)
	var served []string
	for _, id := range tpl.ofType("AWS::ApiGateway::Method") {
		props := asMap(get(tpl.resources()[id], "Properties"))
		path, err := tpl.resourcePath("RestApi", props["ResourceId"])
		if err != nil {
			t.Fatalf("%s: %v", id, err)
		}
		served = append(served, asString(props["HttpMethod"])+" "+path)
	}
	var missing []string
	for _, r := range appRoutes(t) {
		if !slices.Contains(served, r) && !slices.Contains(notOnRestAPI, r) {
			missing = append(missing, r)
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("the REST API does not serve %s", strings.Join(missing, ", "))
	}
}
