package deploy

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/lambent/lambent/pkg/tools"
	"github.com/lambent/lambent/pkg/tools/builtin"
)

// root is the repository root, seen from this package's directory.
const root = ".."

// pendingFunctionDirs lists function directories that template.yaml builds
// (through mk/sam.mk) but that work in progress has not created yet. The test
// tolerates a missing directory only when it is listed here, and fails once a
// listed directory exists, so that the entry is removed: delete each line
// when its directory lands, and the whole list when it is empty.
var pendingFunctionDirs = []string{}

// pendingEnvNames lists environment names template.yaml sets that no code
// in pkg/app or functions/ reads yet. Same rule as pendingFunctionDirs: an
// entry must go once the code reads the name.
var pendingEnvNames = []string{}

// The functions the product needs, and the streaming routes of the REST API.
var (
	requiredFunctions = []string{"GatewayFunction", "WorkerFunction", "WebSocketFunction", "CalculatorToolFunction", "FetchUrlToolFunction"}
	restRoutes        = []string{
		"POST /v1/responses",
		"GET /v1/responses/{id}",
		"DELETE /v1/responses/{id}",
		"GET /v1/responses/{id}/input_items",
		"POST /v1/responses/{id}/cancel",
		"POST /v1/responses/compact",
		"POST /v1/responses/input_tokens",
		"POST /v1/conversations",
		"GET /v1/conversations/{id}",
		"POST /v1/conversations/{id}",
		"DELETE /v1/conversations/{id}",
		"POST /v1/conversations/{id}/items",
		"GET /v1/conversations/{id}/items",
		"GET /v1/conversations/{id}/items/{item_id}",
		"DELETE /v1/conversations/{id}/items/{item_id}",
		"GET /v1/models",
		"GET /v1/models/{id+}",
	}
)

// ---------------------------------------------------------------- loading

// cfnTemplate is template.yaml decoded to plain values: maps, lists,
// scalars, and intrinsic functions in their JSON form ({"Ref": x},
// {"Fn::GetAtt": [r, a]}, {"Fn::Sub": s}, ...), whichever YAML form (short
// tag or long key) the template uses.
type cfnTemplate map[string]any

func loadTemplate(t *testing.T) cfnTemplate {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, "template.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	tpl, err := parseTemplate(data)
	if err != nil {
		t.Fatalf("template.yaml: %v", err)
	}
	return tpl
}

func parseTemplate(data []byte) (cfnTemplate, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, err
	}
	v, err := cfnValue(&doc)
	if err != nil {
		return nil, err
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("top level is %T, not a mapping", v)
	}
	return m, nil
}

// cfnValue converts a YAML node, turning CloudFormation's short tags
// (!Ref, !Sub, !GetAtt, !If, ...) into their long forms.
func cfnValue(n *yaml.Node) (any, error) {
	switch n.Kind {
	case yaml.DocumentNode:
		if len(n.Content) != 1 {
			return nil, fmt.Errorf("line %d: want one document", n.Line)
		}
		return cfnValue(n.Content[0])
	case yaml.AliasNode:
		return cfnValue(n.Alias)
	}
	var v any
	switch n.Kind {
	case yaml.MappingNode:
		m := make(map[string]any, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i].Value
			if _, dup := m[k]; dup {
				return nil, fmt.Errorf("line %d: key %q defined twice", n.Content[i].Line, k)
			}
			val, err := cfnValue(n.Content[i+1])
			if err != nil {
				return nil, err
			}
			m[k] = val
		}
		v = m
	case yaml.SequenceNode:
		l := make([]any, 0, len(n.Content))
		for _, c := range n.Content {
			val, err := cfnValue(c)
			if err != nil {
				return nil, err
			}
			l = append(l, val)
		}
		v = l
	case yaml.ScalarNode:
		if strings.HasPrefix(n.Tag, "!!") || n.Tag == "" {
			if err := n.Decode(&v); err != nil {
				return nil, fmt.Errorf("line %d: %w", n.Line, err)
			}
			return v, nil
		}
		v = n.Value
	default:
		return nil, fmt.Errorf("line %d: unexpected YAML node kind %v", n.Line, n.Kind)
	}
	if !strings.HasPrefix(n.Tag, "!") || strings.HasPrefix(n.Tag, "!!") {
		return v, nil
	}
	name := strings.TrimPrefix(n.Tag, "!")
	switch name {
	case "Ref", "Condition":
		return map[string]any{name: v}, nil
	case "GetAtt":
		if s, ok := v.(string); ok {
			res, attr, found := strings.Cut(s, ".")
			if !found {
				return nil, fmt.Errorf("line %d: !GetAtt %q is not Resource.Attribute", n.Line, s)
			}
			v = []any{res, attr}
		}
		return map[string]any{"Fn::GetAtt": v}, nil
	case "Base64", "Cidr", "Equals", "FindInMap", "GetAZs", "If", "ImportValue", "Join", "Not", "And", "Or",
		"Select", "Split", "Sub", "Transform", "Length", "ToJsonString":
		return map[string]any{"Fn::" + name: v}, nil
	}
	return nil, fmt.Errorf("line %d: unknown tag %s", n.Line, n.Tag)
}

// ---------------------------------------------------------------- helpers

func get(v any, keys ...string) any {
	if tpl, ok := v.(cfnTemplate); ok {
		v = map[string]any(tpl)
	}
	for _, k := range keys {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}

func asMap(v any) map[string]any { m, _ := v.(map[string]any); return m }
func asList(v any) []any         { l, _ := v.([]any); return l }
func asString(v any) string      { s, _ := v.(string); return s }

// asStrings returns a string or a list of strings as a list.
func asStrings(v any) []string {
	if s, ok := v.(string); ok {
		return []string{s}
	}
	var out []string
	for _, e := range asList(v) {
		out = append(out, asString(e))
	}
	return out
}

func asInt(v any) (int, bool) {
	switch x := v.(type) {
	case int:
		return x, true
	case string:
		n, err := strconv.Atoi(x)
		return n, err == nil
	}
	return 0, false
}

// isRef reports whether v is {"Ref": name}.
func isRef(v any, name string) bool {
	m := asMap(v)
	return len(m) == 1 && m["Ref"] == name
}

// refs returns the names v refers to with Ref, directly or in the branches
// of an Fn::If.
func refs(v any) []string {
	if name, ok := asMap(v)["Ref"].(string); ok && len(asMap(v)) == 1 {
		return []string{name}
	}
	var out []string
	if branches := asList(asMap(v)["Fn::If"]); len(branches) == 3 {
		for _, b := range branches[1:] {
			out = append(out, refs(b)...)
		}
	}
	return out
}

// ifCond returns the condition and branches of {"Fn::If": [c, a, b]}.
func ifCond(v any) (cond string, yes, no any, ok bool) {
	l := asList(asMap(v)["Fn::If"])
	if len(asMap(v)) != 1 || len(l) != 3 {
		return "", nil, nil, false
	}
	return asString(l[0]), l[1], l[2], true
}

// getAtt returns the resource and attribute of {"Fn::GetAtt": [r, a]}.
func getAtt(v any) (res, attr string, ok bool) {
	m := asMap(v)
	l := asList(m["Fn::GetAtt"])
	if len(m) != 1 || len(l) != 2 {
		return "", "", false
	}
	return asString(l[0]), asString(l[1]), true
}

// sub returns the string of {"Fn::Sub": s} (without a variable map).
func sub(v any) (string, bool) {
	m := asMap(v)
	s, ok := m["Fn::Sub"].(string)
	return s, ok && len(m) == 1
}

func (tpl cfnTemplate) resources() map[string]any { return asMap(tpl["Resources"]) }

func (tpl cfnTemplate) resource(t *testing.T, id, typ string) map[string]any {
	t.Helper()
	r := asMap(tpl.resources()[id])
	if r == nil {
		t.Fatalf("resource %s missing", id)
	}
	if got := asString(r["Type"]); got != typ {
		t.Fatalf("resource %s is a %s, want %s", id, got, typ)
	}
	return r
}

func (tpl cfnTemplate) ofType(typ string) []string {
	var ids []string
	for id, r := range tpl.resources() {
		if get(r, "Type") == typ {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	return ids
}

func (tpl cfnTemplate) functions() []string { return tpl.ofType("AWS::Serverless::Function") }

// fnProp returns a function property, or the Globals value when the
// function does not set it.
func (tpl cfnTemplate) fnProp(id, prop string) any {
	if v := get(tpl.resources()[id], "Properties", prop); v != nil {
		return v
	}
	return get(tpl, "Globals", "Function", prop)
}

// env returns a function's environment, Globals merged in.
func (tpl cfnTemplate) env(id string) map[string]any {
	out := map[string]any{}
	for k, v := range asMap(get(tpl, "Globals", "Function", "Environment", "Variables")) {
		out[k] = v
	}
	for k, v := range asMap(get(tpl.resources()[id], "Properties", "Environment", "Variables")) {
		out[k] = v
	}
	return out
}

func (tpl cfnTemplate) param(t *testing.T, name string) map[string]any {
	t.Helper()
	p := asMap(get(tpl, "Parameters", name))
	if p == nil {
		t.Fatalf("parameter %s missing", name)
	}
	return p
}

// ---------------------------------------------------------------- template

func TestTemplateIsSAM(t *testing.T) {
	tpl := loadTemplate(t)
	if tpl["Transform"] != "AWS::Serverless-2016-10-31" {
		t.Errorf("Transform = %v, want AWS::Serverless-2016-10-31", tpl["Transform"])
	}
	if got := get(tpl, "Globals", "Function", "Runtime"); got != "provided.al2023" {
		t.Errorf("Globals.Function.Runtime = %v, want provided.al2023", got)
	}
}

func TestFunctions(t *testing.T) {
	tpl := loadTemplate(t)
	fns := tpl.functions()
	for _, id := range requiredFunctions {
		if !slices.Contains(fns, id) {
			t.Errorf("function %s missing", id)
		}
	}
	for _, id := range fns {
		r := tpl.resources()[id]
		if got := tpl.fnProp(id, "Runtime"); got != "provided.al2023" {
			t.Errorf("%s: Runtime = %v, want provided.al2023", id, got)
		}
		if got := tpl.fnProp(id, "Architectures"); !reflect.DeepEqual(got, []any{"arm64"}) {
			t.Errorf("%s: Architectures = %v, want [arm64]", id, got)
		}
		if got := tpl.fnProp(id, "Handler"); got != "bootstrap" {
			t.Errorf("%s: Handler = %v, want bootstrap", id, got)
		}
		if got := get(r, "Metadata", "BuildMethod"); got != "makefile" {
			t.Errorf("%s: Metadata.BuildMethod = %v, want makefile", id, got)
		}
		// The build targets compile ./functions/<dir> of the module, so SAM
		// must copy the module root.
		if got := get(r, "Properties", "CodeUri"); got != "." {
			t.Errorf("%s: CodeUri = %v, want . (the module root)", id, got)
		}
		for _, p := range []string{"MemorySize", "Timeout"} {
			if _, ok := asInt(tpl.fnProp(id, p)); !ok {
				t.Errorf("%s: %s not set", id, p)
			}
		}
	}
	for _, id := range []string{"CalculatorToolFunction", "FetchUrlToolFunction"} {
		if m, _ := asInt(tpl.fnProp(id, "MemorySize")); m != 128 {
			t.Errorf("%s: MemorySize = %d, want 128", id, m)
		}
		if s, _ := asInt(tpl.fnProp(id, "Timeout")); s != 30 {
			t.Errorf("%s: Timeout = %d, want 30", id, s)
		}
	}
}

// buildTarget is what `make -n build-<LogicalId>` runs.
type buildTarget struct {
	command string
	dir     string // functions/...
}

var functionDirRE = regexp.MustCompile(`\./(functions/[A-Za-z0-9_./-]+)`)

// buildTargets expands mk/sam.mk's build-<LogicalId> targets with make itself.
func buildTargets(t *testing.T, ids []string) map[string]buildTarget {
	t.Helper()
	out := map[string]buildTarget{}
	for _, id := range ids {
		cmd := exec.Command("make", "--no-print-directory", "-s", "-n", "-C", root, "build-"+id, "ARTIFACTS_DIR=/artifacts")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		stdout, err := cmd.Output()
		if err != nil {
			t.Errorf("make -n build-%s: %v\n%s", id, err, stderr.String())
			continue
		}
		command := strings.TrimSpace(string(stdout))
		if command == "" {
			t.Errorf("mk/sam.mk has no recipe for build-%s", id)
			continue
		}
		m := functionDirRE.FindStringSubmatch(command)
		if m == nil {
			t.Errorf("build-%s builds no ./functions/... package: %s", id, command)
			continue
		}
		out[id] = buildTarget{command: command, dir: strings.TrimSuffix(m[1], "/")}
	}
	return out
}

func TestBuildTargets(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Fatal("make is needed to expand mk/sam.mk:", err)
	}
	tpl := loadTemplate(t)
	var ids []string
	for _, id := range tpl.functions() {
		if get(tpl.resources()[id], "Metadata", "BuildMethod") == "makefile" {
			ids = append(ids, id)
		}
	}
	targets := buildTargets(t, ids)
	seenDirs := map[string]string{}
	for _, id := range ids {
		bt, ok := targets[id]
		if !ok {
			continue
		}
		for _, want := range []string{"GOOS=linux", "GOARCH=arm64", "CGO_ENABLED=0", "-tags lambda.norpc,lambent_lambda", "-trimpath", `-ldflags "-s -w"`, "-o /artifacts/bootstrap"} {
			if !strings.Contains(bt.command, want) {
				t.Errorf("build-%s lacks %s: %s", id, want, bt.command)
			}
		}
		if other, dup := seenDirs[bt.dir]; dup {
			t.Errorf("build-%s and build-%s both build %s", id, other, bt.dir)
		}
		seenDirs[bt.dir] = id
		pending := slices.Contains(pendingFunctionDirs, bt.dir)
		switch exists := isMainPackage(t, filepath.Join(root, bt.dir)); {
		case !exists && !pending:
			t.Errorf("%s builds %s, which holds no main package (and it is not in pendingFunctionDirs)", id, bt.dir)
		case exists && pending:
			t.Errorf("%s exists now: remove it from pendingFunctionDirs in deploy/template_test.go", bt.dir)
		}
	}
	for _, dir := range pendingFunctionDirs {
		if _, ok := seenDirs[dir]; !ok {
			t.Errorf("pendingFunctionDirs lists %s, which no function of template.yaml builds", dir)
		}
	}
}

// isMainPackage reports whether dir holds a non-test Go file of package main.
func isMainPackage(t *testing.T, dir string) bool {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		return false
	}
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(dir, name), nil, parser.PackageClauseOnly)
		if err == nil && f.Name.Name == "main" {
			return true
		}
	}
	return false
}

// ---------------------------------------------------------------- streaming

func TestFunctionURLStreams(t *testing.T) {
	tpl := loadTemplate(t)
	url := asMap(get(tpl.resources()["GatewayFunction"], "Properties", "FunctionUrlConfig"))
	if url == nil {
		t.Fatal("GatewayFunction has no FunctionUrlConfig")
	}
	if url["InvokeMode"] != "RESPONSE_STREAM" {
		t.Errorf("function URL InvokeMode = %v, want RESPONSE_STREAM", url["InvokeMode"])
	}
	if !isRef(url["AuthType"], "FunctionUrlAuthType") {
		t.Errorf("function URL AuthType = %v, want !Ref FunctionUrlAuthType", url["AuthType"])
	}
	p := tpl.param(t, "FunctionUrlAuthType")
	if p["Default"] != "AWS_IAM" {
		t.Errorf("FunctionUrlAuthType default = %v, want AWS_IAM", p["Default"])
	}
	if !reflect.DeepEqual(p["AllowedValues"], []any{"AWS_IAM", "NONE"}) {
		t.Errorf("FunctionUrlAuthType AllowedValues = %v, want [AWS_IAM NONE]", p["AllowedValues"])
	}

	// SAM grants public access only for a literal AuthType NONE, so the
	// template grants it itself, and only under that condition.
	cond := get(tpl, "Conditions", "IsPublicFunctionUrl")
	wantCond := map[string]any{"Fn::Equals": []any{map[string]any{"Ref": "FunctionUrlAuthType"}, "NONE"}}
	if !reflect.DeepEqual(cond, wantCond) {
		t.Errorf("condition IsPublicFunctionUrl = %v, want %v", cond, wantCond)
	}
	actions := map[string]bool{}
	for _, id := range tpl.ofType("AWS::Lambda::Permission") {
		r := tpl.resources()[id]
		props := asMap(get(r, "Properties"))
		if props["Principal"] != "*" {
			continue
		}
		if get(r, "Condition") != "IsPublicFunctionUrl" {
			t.Errorf("%s grants %v to everyone without Condition IsPublicFunctionUrl", id, props["Action"])
		}
		if !isRef(props["FunctionName"], "GatewayFunction") {
			t.Errorf("%s: FunctionName = %v, want !Ref GatewayFunction", id, props["FunctionName"])
		}
		switch props["Action"] {
		case "lambda:InvokeFunctionUrl":
			if props["FunctionUrlAuthType"] != "NONE" {
				t.Errorf("%s: FunctionUrlAuthType = %v, want NONE", id, props["FunctionUrlAuthType"])
			}
		case "lambda:InvokeFunction":
			if props["InvokedViaFunctionUrl"] != true {
				t.Errorf("%s: public lambda:InvokeFunction without InvokedViaFunctionUrl: true", id)
			}
		default:
			t.Errorf("%s: unexpected public action %v", id, props["Action"])
		}
		actions[asString(props["Action"])] = true
	}
	if !actions["lambda:InvokeFunctionUrl"] || !actions["lambda:InvokeFunction"] {
		t.Errorf("a public function URL needs both lambda:InvokeFunctionUrl and lambda:InvokeFunction; have %v", actions)
	}
}

func TestRestAPIStreams(t *testing.T) {
	tpl := loadTemplate(t)
	apis := tpl.ofType("AWS::ApiGateway::RestApi")
	if len(apis) != 1 {
		t.Fatalf("REST APIs: %v, want one", apis)
	}
	api := apis[0]
	if got := get(tpl.resources()[api], "Properties", "EndpointConfiguration", "Types"); !reflect.DeepEqual(got, []any{"REGIONAL"}) {
		t.Errorf("%s endpoint types = %v, want [REGIONAL] (edge-optimized streams idle out after 30 s)", api, got)
	}
	gatewayTimeout, _ := asInt(tpl.fnProp("GatewayFunction", "Timeout"))
	if p := tpl.param(t, "RestApiAuthType"); p["Default"] != "AWS_IAM" {
		t.Errorf("RestApiAuthType default = %v, want AWS_IAM", p["Default"])
	}

	routes := map[string]string{} // "METHOD /path" -> method resource
	for _, id := range tpl.ofType("AWS::ApiGateway::Method") {
		props := asMap(get(tpl.resources()[id], "Properties"))
		if !isRef(props["RestApiId"], api) {
			t.Errorf("%s: RestApiId = %v, want !Ref %s", id, props["RestApiId"], api)
		}
		path, err := tpl.resourcePath(api, props["ResourceId"])
		if err != nil {
			t.Errorf("%s: %v", id, err)
			continue
		}
		route := asString(props["HttpMethod"]) + " " + path
		if other, dup := routes[route]; dup {
			t.Errorf("%s and %s both serve %s", id, other, route)
		}
		routes[route] = id
		if !isRef(props["AuthorizationType"], "RestApiAuthType") {
			t.Errorf("%s: AuthorizationType = %v, want !Ref RestApiAuthType", id, props["AuthorizationType"])
		}
		in := asMap(props["Integration"])
		if in["Type"] != "AWS_PROXY" || in["IntegrationHttpMethod"] != "POST" {
			t.Errorf("%s: integration %v/%v, want a Lambda proxy (AWS_PROXY, POST)", id, in["Type"], in["IntegrationHttpMethod"])
		}
		if in["ResponseTransferMode"] != "STREAM" {
			t.Errorf("%s: ResponseTransferMode = %v, want STREAM", id, in["ResponseTransferMode"])
		}
		const uri = "arn:${AWS::Partition}:apigateway:${AWS::Region}:lambda:path/2021-11-15/functions/${GatewayFunction.Arn}/response-streaming-invocations"
		if s, _ := sub(in["Uri"]); s != uri {
			t.Errorf("%s: integration Uri = %v, want !Sub %s", id, in["Uri"], uri)
		}
		ms, ok := asInt(in["TimeoutInMillis"])
		if !ok || ms <= 29000 || ms > 900000 || ms > gatewayTimeout*1000 {
			t.Errorf("%s: TimeoutInMillis = %v, want above the buffered 29 s, at most 900000 and the gateway's Timeout (%d s)", id, in["TimeoutInMillis"], gatewayTimeout)
		}
	}
	var got []string
	for r := range routes {
		got = append(got, r)
	}
	sort.Strings(got)
	want := slices.Clone(restRoutes)
	sort.Strings(want)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("REST routes %v, want %v", got, want)
	}

	// The stage serves a deployment made after every method.
	stages := tpl.ofType("AWS::ApiGateway::Stage")
	if len(stages) != 1 {
		t.Fatalf("stages %v, want one", stages)
	}
	stage := asMap(get(tpl.resources()[stages[0]], "Properties"))
	depIDs := refs(stage["DeploymentId"])
	if len(depIDs) == 0 {
		t.Errorf("stage DeploymentId = %v, want references to deployments", stage["DeploymentId"])
	}
	for _, depID := range depIDs {
		dep := tpl.resource(t, depID, "AWS::ApiGateway::Deployment")
		dependsOn := asStrings(dep["DependsOn"])
		for _, id := range routes {
			if !slices.Contains(dependsOn, id) {
				t.Errorf("deployment %s does not depend on %s: the stage may be deployed without it", depID, id)
			}
		}
	}

	// API Gateway may invoke the gateway, from this API only.
	var permitted bool
	for _, id := range tpl.ofType("AWS::Lambda::Permission") {
		props := asMap(get(tpl.resources()[id], "Properties"))
		if props["Principal"] != "apigateway.amazonaws.com" {
			continue
		}
		if src, _ := sub(props["SourceArn"]); strings.Contains(src, "${WebSocketApi}/") {
			continue // the WebSocket API's: TestWebSocketAPI
		}
		if r, a, ok := getAtt(props["FunctionName"]); !ok || r != "GatewayFunction" || a != "Arn" {
			if !isRef(props["FunctionName"], "GatewayFunction") {
				t.Errorf("%s lets API Gateway invoke %v", id, props["FunctionName"])
			}
		}
		src, _ := sub(props["SourceArn"])
		if props["Action"] != "lambda:InvokeFunction" || !strings.Contains(src, "${"+api+"}/") {
			t.Errorf("%s: %v with SourceArn %v, want lambda:InvokeFunction from %s", id, props["Action"], props["SourceArn"], api)
		}
		permitted = true
	}
	if !permitted {
		t.Error("no AWS::Lambda::Permission lets API Gateway invoke GatewayFunction")
	}
}

// resourcePath follows an AWS::ApiGateway::Resource chain up to the API root.
func (tpl cfnTemplate) resourcePath(api string, ref any) (string, error) {
	var parts []string
	for range 20 {
		if r, a, ok := getAtt(ref); ok && r == api && a == "RootResourceId" {
			return "/" + strings.Join(parts, "/"), nil
		}
		id, _ := asMap(ref)["Ref"].(string)
		res := tpl.resources()[id]
		if get(res, "Type") != "AWS::ApiGateway::Resource" {
			return "", fmt.Errorf("resource reference %v is not an AWS::ApiGateway::Resource", ref)
		}
		parts = append([]string{asString(get(res, "Properties", "PathPart"))}, parts...)
		ref = get(res, "Properties", "ParentId")
	}
	return "", fmt.Errorf("resource chain of %v too deep", ref)
}

// ---------------------------------------------------------------- environment

// knownEnvNames returns the LAMBENT_ names that non-test Go code of pkg/app
// and functions/ mentions as string literals — the names the code reads.
func knownEnvNames(t *testing.T) map[string]bool {
	t.Helper()
	names := map[string]bool{}
	re := regexp.MustCompile(`^LAMBENT_[A-Z0-9_]+$`)
	scan := func(path string) {
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
				if s, err := strconv.Unquote(lit.Value); err == nil && re.MatchString(s) {
					names[s] = true
				}
			}
			return true
		})
	}
	goFile := func(name string) bool { return strings.HasSuffix(name, ".go") && !strings.HasSuffix(name, "_test.go") }
	appFiles, err := filepath.Glob(filepath.Join(root, "pkg", "app", "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range appFiles {
		if goFile(p) {
			scan(p)
		}
	}
	err = filepath.WalkDir(filepath.Join(root, "functions"), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && goFile(p) {
			scan(p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"LAMBENT_STORE", "LAMBENT_TABLE", "LAMBENT_PROVIDER_URL"} {
		if !names[want] {
			t.Fatalf("the config code does not read %s any more: the scan of pkg/app and functions/ is broken", want)
		}
	}
	return names
}

func TestEnvironmentNamesMatchConfig(t *testing.T) {
	tpl := loadTemplate(t)
	known := knownEnvNames(t)
	used := map[string]bool{}
	for _, id := range tpl.functions() {
		for name := range tpl.env(id) {
			used[name] = true
			switch {
			case known[name]:
			case slices.Contains(pendingEnvNames, name):
			default:
				t.Errorf("%s: environment %s is read by no code in pkg/app or functions/ (typo? or add it to pendingEnvNames while its code is written)", id, name)
			}
		}
	}
	for _, name := range pendingEnvNames {
		if known[name] {
			t.Errorf("%s is read by the code now: remove it from pendingEnvNames in deploy/template_test.go", name)
		}
		if !used[name] {
			t.Errorf("pendingEnvNames lists %s, which template.yaml does not set", name)
		}
	}

	for _, id := range []string{"GatewayFunction", "WorkerFunction"} {
		env := tpl.env(id)
		if env["LAMBENT_STORE"] != "dynamodb" {
			t.Errorf("%s: LAMBENT_STORE = %v, want dynamodb", id, env["LAMBENT_STORE"])
		}
		if !isRef(env["LAMBENT_TABLE"], "ResponsesTable") {
			t.Errorf("%s: LAMBENT_TABLE = %v, want !Ref ResponsesTable", id, env["LAMBENT_TABLE"])
		}
		if env["LAMBENT_PROVIDER_URL"] == nil {
			t.Errorf("%s: LAMBENT_PROVIDER_URL not set", id)
		}
		// The key is read whenever the OpenAI-compatible provider may be
		// used: unless Bedrock serves every model.
		if cond, yes, no, ok := ifCond(env["LAMBENT_PROVIDER_API_KEY_SSM"]); !ok || cond != "UsesProviderKey" || !isRef(yes, "ProviderApiKeyParameter") || !isRef(no, "AWS::NoValue") {
			t.Errorf("%s: LAMBENT_PROVIDER_API_KEY_SSM = %v, want !If [UsesProviderKey, !Ref ProviderApiKeyParameter, !Ref AWS::NoValue]", id, env["LAMBENT_PROVIDER_API_KEY_SSM"])
		}
		if !isRef(env["LAMBENT_PROVIDER"], "ModelProvider") {
			t.Errorf("%s: LAMBENT_PROVIDER = %v, want !Ref ModelProvider", id, env["LAMBENT_PROVIDER"])
		}
		if !isRef(env["LAMBENT_MODEL_ROUTES"], "ModelRoutes") {
			t.Errorf("%s: LAMBENT_MODEL_ROUTES = %v, want !Ref ModelRoutes", id, env["LAMBENT_MODEL_ROUTES"])
		}
		if env["LAMBENT_TOOLS"] == nil {
			t.Errorf("%s: LAMBENT_TOOLS not set", id)
		}
		if !isRef(env["LAMBENT_QUEUE_URL"], "ResponsesQueue") {
			t.Errorf("%s: LAMBENT_QUEUE_URL = %v, want !Ref ResponsesQueue", id, env["LAMBENT_QUEUE_URL"])
		}
	}
	// Both publish the terminal background states they reach: the worker
	// those it runs to the end, the gateway the queued responses it cancels.
	for _, id := range []string{"GatewayFunction", "WorkerFunction"} {
		if env := tpl.env(id); !isRef(env["LAMBENT_EVENT_BUS"], "LambentBus") {
			t.Errorf("%s: LAMBENT_EVENT_BUS = %v, want !Ref LambentBus", id, env["LAMBENT_EVENT_BUS"])
		}
	}
}

// The provider's key is never in the template: not as an environment value,
// not as a parameter (not even one without a default, which would end up in
// samconfig.toml and the stack's parameters).
func TestProviderKeyNotInTemplate(t *testing.T) {
	tpl := loadTemplate(t)
	for _, id := range tpl.functions() {
		if v, ok := tpl.env(id)["LAMBENT_PROVIDER_API_KEY"]; ok {
			t.Errorf("%s sets LAMBENT_PROVIDER_API_KEY (%v); the key comes from SSM (LAMBENT_PROVIDER_API_KEY_SSM)", id, v)
		}
	}
	secretish := regexp.MustCompile(`(?i)(api_?key|secret|token|password)`)
	for name := range asMap(tpl["Parameters"]) {
		if secretish.MatchString(name) && !strings.HasSuffix(name, "Parameter") && !strings.HasSuffix(name, "KmsKeyArn") {
			t.Errorf("parameter %s looks like it carries a secret; pass the name of an SSM parameter instead", name)
		}
	}
	p := tpl.param(t, "ProviderApiKeyParameter")
	if !strings.HasPrefix(asString(p["Default"]), "/") || !strings.HasPrefix(asString(p["AllowedPattern"]), "^/") {
		t.Errorf("ProviderApiKeyParameter: want a default name and an AllowedPattern starting with / (the IAM resource is parameter${ProviderApiKeyParameter}); got %v / %v", p["Default"], p["AllowedPattern"])
	}
}

// The tool manifest the functions get names exactly the tool functions of
// the template, each under the name of the tool its function builds.
func TestToolManifestMatchesToolFunctions(t *testing.T) {
	tpl := loadTemplate(t)
	var toolFns []string
	for _, id := range tpl.functions() {
		if strings.HasSuffix(id, "ToolFunction") {
			toolFns = append(toolFns, id)
		}
	}
	targets := buildTargets(t, toolFns)
	builtins := builtin.Tools(builtin.Config{})
	varRE := regexp.MustCompile(`\$\{([^}]*)\}`)
	var first string
	for _, id := range []string{"GatewayFunction", "WorkerFunction"} {
		src, ok := sub(tpl.env(id)["LAMBENT_TOOLS"])
		if !ok {
			t.Errorf("%s: LAMBENT_TOOLS is not a !Sub string", id)
			continue
		}
		if first == "" {
			first = src
		} else if src != first {
			t.Errorf("%s: LAMBENT_TOOLS differs from GatewayFunction's", id)
		}
		var bad []string
		doc := varRE.ReplaceAllStringFunc(src, func(v string) string {
			ref := varRE.FindStringSubmatch(v)[1]
			fn, attr, _ := strings.Cut(ref, ".")
			if attr != "Arn" || !slices.Contains(toolFns, fn) {
				bad = append(bad, ref)
				return v
			}
			return "arn:aws:lambda:us-east-1:123456789012:function:" + fn
		})
		if len(bad) > 0 {
			t.Errorf("%s: LAMBENT_TOOLS substitutes %v; only ${<Tool>Function.Arn} of the template's tool functions belong there", id, bad)
			continue
		}
		m, err := tools.ParseManifest([]byte(doc))
		if err != nil {
			t.Errorf("%s: LAMBENT_TOOLS: %v", id, err)
			continue
		}
		inManifest := map[string]bool{}
		for _, tool := range m.Tools {
			if tool.Backing.Type != tools.BackingLambda {
				t.Errorf("%s: tool %s has backing %q, want lambda in AWS", id, tool.Name, tool.Backing.Type)
				continue
			}
			fn := strings.TrimPrefix(tool.Backing.Function, "arn:aws:lambda:us-east-1:123456789012:function:")
			inManifest[fn] = true
			if bt, ok := targets[fn]; ok && filepath.Base(bt.dir) != tool.Name {
				t.Errorf("%s: tool %s is backed by %s, which builds %s", id, tool.Name, fn, bt.dir)
			}
			if _, ok := builtins[tool.Name]; !ok && len(tool.Parameters) == 0 {
				t.Errorf("%s: tool %s is no built-in and the manifest gives it no parameters schema", id, tool.Name)
			}
		}
		for _, fn := range toolFns {
			if !inManifest[fn] {
				t.Errorf("%s: LAMBENT_TOOLS does not list %s", id, fn)
			}
		}
	}
}

// ---------------------------------------------------------------- IAM

// allowedResources is every resource a function's policies may name; the
// service of each action must match its resource's.
var allowedResources = map[string][]string{
	"GatewayFunction": {"ResponsesTable", "CalculatorToolFunction", "FetchUrlToolFunction", "ResponsesQueue", "LambentBus", "ssm-parameter", "api-keys-parameter", "compaction-keys-parameter", "secret-key-parameter", "kms-key", "bedrock-model", "bedrock-guardrail", "hook-bus", "hook-function"},
	"WorkerFunction":  {"ResponsesTable", "CalculatorToolFunction", "FetchUrlToolFunction", "ResponsesQueue", "LambentBus", "ssm-parameter", "compaction-keys-parameter", "secret-key-parameter", "kms-key", "bedrock-model", "bedrock-guardrail", "hook-bus", "hook-function"},
	"WebSocketFunction": {"ResponsesTable", "WebSocketConnectionsTable", "CalculatorToolFunction", "FetchUrlToolFunction", "WebSocketQueue", "websocket-connections",
		"ssm-parameter", "api-keys-parameter", "compaction-keys-parameter", "secret-key-parameter", "kms-key", "bedrock-model", "bedrock-guardrail", "hook-bus", "hook-function"},
}

// serviceOf is the IAM service prefix each kind of resource goes with.
var serviceOf = map[string]string{
	"ResponsesTable":            "dynamodb",
	"WebSocketConnectionsTable": "dynamodb",
	"WebSocketQueue":            "sqs",
	"websocket-connections":     "execute-api",
	"CalculatorToolFunction":    "lambda",
	"FetchUrlToolFunction":      "lambda",
	"ResponsesQueue":            "sqs",
	"LambentBus":                "events",
	"ssm-parameter":             "ssm",
	"api-keys-parameter":        "ssm",
	"compaction-keys-parameter": "ssm",
	"secret-key-parameter":      "ssm",
	"kms-key":                   "kms",
	"bedrock-model":             "bedrock",
	"bedrock-guardrail":         "bedrock",
	"hook-bus":                  "events",
	"hook-function":             "lambda",
}

const (
	ssmParameterArn       = "arn:${AWS::Partition}:ssm:${AWS::Region}:${AWS::AccountId}:parameter${ProviderApiKeyParameter}"
	apiKeysParameterArn   = "arn:${AWS::Partition}:ssm:${AWS::Region}:${AWS::AccountId}:parameter${ApiKeysParameter}"
	compactionKeysArn     = "arn:${AWS::Partition}:ssm:${AWS::Region}:${AWS::AccountId}:parameter${CompactionKeysParameter}"
	secretKeyParameterArn = "arn:${AWS::Partition}:ssm:${AWS::Region}:${AWS::AccountId}:parameter${SecretKeyParameter}"
	guardrailArn          = "arn:${AWS::Partition}:bedrock:${AWS::Region}:${AWS::AccountId}:guardrail/${BedrockGuardrailId}"
	// wsConnectionsArn is the WebSocket API's connections, for one method.
	wsConnectionsArn = "arn:${AWS::Partition}:execute-api:${AWS::Region}:${AWS::AccountId}:${WebSocketApi}/${WebSocketStageName}/%s/@connections/*"
)

// classify names the resource an IAM Resource value stands for, or "".
func classify(v any) string {
	if r, a, ok := getAtt(v); ok && a == "Arn" {
		return r
	}
	if isRef(v, "ProviderApiKeyKmsKeyArn") {
		return "kms-key"
	}
	if isRef(v, "ToolHookEventBusArn") {
		return "hook-bus"
	}
	if isRef(v, "ToolHookFunctionArn") {
		return "hook-function"
	}
	if s, ok := sub(v); ok && s == ssmParameterArn {
		return "ssm-parameter"
	}
	if s, ok := sub(v); ok && s == apiKeysParameterArn {
		return "api-keys-parameter"
	}
	if s, ok := sub(v); ok && s == compactionKeysArn {
		return "compaction-keys-parameter"
	}
	if s, ok := sub(v); ok && s == secretKeyParameterArn {
		return "secret-key-parameter"
	}
	// The models of the BedrockModelArns parameter (its AllowedPattern
	// admits bedrock model and inference profile ARNs only; see
	// TestBedrockGrant).
	if isRef(v, "BedrockModelArns") {
		return "bedrock-model"
	}
	if s, ok := sub(v); ok && s == guardrailArn {
		return "bedrock-guardrail"
	}
	if s, ok := sub(v); ok && (s == fmt.Sprintf(wsConnectionsArn, "POST") || s == fmt.Sprintf(wsConnectionsArn, "DELETE")) {
		return "websocket-connections"
	}
	return ""
}

// statements returns a policy's statements, both branches of an Fn::If.
func statements(v any) []map[string]any {
	var out []map[string]any
	for _, s := range asList(v) {
		if branches := asList(asMap(s)["Fn::If"]); len(branches) == 3 {
			for _, b := range branches[1:] {
				if !isRef(b, "AWS::NoValue") {
					out = append(out, statements([]any{b})...)
				}
			}
			continue
		}
		out = append(out, asMap(s))
	}
	return out
}

func TestIAMLeastPrivilege(t *testing.T) {
	tpl := loadTemplate(t)
	for _, typ := range []string{"AWS::IAM::Role", "AWS::IAM::Policy", "AWS::IAM::ManagedPolicy"} {
		if ids := tpl.ofType(typ); len(ids) > 0 {
			t.Errorf("%s %v: IAM lives in each function's Policies, which this test checks", typ, ids)
		}
	}
	toolFns := map[string]bool{}
	for _, id := range tpl.functions() {
		if strings.HasSuffix(id, "ToolFunction") {
			toolFns[id] = true
		}
	}
	for _, id := range tpl.functions() {
		props := asMap(get(tpl.resources()[id], "Properties"))
		if props["Role"] != nil {
			t.Errorf("%s: an explicit Role escapes this check", id)
		}
		// SAM attaches AWS-managed policies with Resource "*" to these.
		for name, ev := range asMap(props["Events"]) {
			switch typ := asString(get(ev, "Type")); typ {
			case "SQS", "Kinesis", "DynamoDB", "MSK", "MQ", "SelfManagedKafka", "DocumentDB":
				t.Errorf("%s: event %s of type %s attaches an AWS-managed policy on Resource \"*\"; use an AWS::Lambda::EventSourceMapping with a scoped statement", id, name, typ)
			}
		}
		allowed := allowedResources[id]
		invokes := map[string]bool{}
		for i, p := range asList(props["Policies"]) {
			doc := asMap(p)
			if doc == nil || doc["Statement"] == nil {
				// Managed policy names and SAM policy templates (whose
				// expansions use wildcards such as table/x/index/* or
				// function:name*) are not allowed.
				t.Errorf("%s: Policies[%d] = %v is not an inline policy document", id, i, p)
				continue
			}
			for _, st := range statements(doc["Statement"]) {
				sid := asString(st["Sid"])
				if st["Effect"] != "Allow" {
					t.Errorf("%s %s: Effect %v", id, sid, st["Effect"])
				}
				if st["NotAction"] != nil || st["NotResource"] != nil {
					t.Errorf("%s %s: NotAction/NotResource are not least privilege", id, sid)
				}
				actions := asStrings(st["Action"])
				if len(actions) == 0 {
					t.Errorf("%s %s: no actions", id, sid)
				}
				resources := asList(st["Resource"])
				if resources == nil {
					resources = []any{st["Resource"]}
				}
				for _, r := range resources {
					kind := classify(r)
					if kind == "" || !slices.Contains(allowed, kind) {
						t.Errorf("%s %s: resource %v is not one %s may use (%v)", id, sid, r, id, allowed)
						continue
					}
					for _, a := range actions {
						svc, op, _ := strings.Cut(a, ":")
						if strings.Contains(a, "*") || op == "" {
							t.Errorf("%s %s: action %q: no wildcards", id, sid, a)
						}
						if svc != serviceOf[kind] {
							t.Errorf("%s %s: action %s on %s", id, sid, a, kind)
						}
						if a == "lambda:InvokeFunction" {
							invokes[kind] = true
						}
					}
					if kind == "kms-key" && get(st, "Condition", "StringEquals", "kms:ViaService") == nil {
						t.Errorf("%s %s: kms:Decrypt without a kms:ViaService condition (SSM only)", id, sid)
					}
				}
			}
		}
		if id == "GatewayFunction" || id == "WorkerFunction" || id == "WebSocketFunction" {
			for fn := range toolFns {
				if !invokes[fn] {
					t.Errorf("%s may not invoke the tool function %s", id, fn)
				}
			}
		}
	}
}

// Bedrock: the default provider is a parameter (openai, as locally, or
// bedrock); the functions may invoke only the models of BedrockModelArns,
// whose pattern admits Bedrock model and inference profile ARNs and no
// wildcard model, with exactly the two actions the Converse calls need.
func TestBedrockGrant(t *testing.T) {
	tpl := loadTemplate(t)
	mp := tpl.param(t, "ModelProvider")
	if mp["Default"] != "openai" || !slices.Equal(asStrings(mp["AllowedValues"]), []string{"openai", "bedrock"}) {
		t.Errorf("ModelProvider: default %v, allowed %v; want openai (the local default) of [openai bedrock]", mp["Default"], mp["AllowedValues"])
	}
	arns := tpl.param(t, "BedrockModelArns")
	if arns["Type"] != "CommaDelimitedList" || arns["Default"] != "" {
		t.Errorf("BedrockModelArns: type %v, default %v; want an empty CommaDelimitedList", arns["Type"], arns["Default"])
	}
	re, err := regexp.Compile(asString(arns["AllowedPattern"]))
	if err != nil {
		t.Fatalf("BedrockModelArns AllowedPattern: %v", err)
	}
	for arn, ok := range map[string]bool{
		"arn:aws:bedrock:us-east-1::foundation-model/amazon.nova-pro-v1:0":                                    true,
		"arn:aws:bedrock:*::foundation-model/anthropic.claude-sonnet-4-20250514-v1:0":                         true,
		"arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.anthropic.claude-sonnet-4-20250514-v1:0": true,
		"arn:aws-us-gov:bedrock:us-gov-west-1:123456789012:application-inference-profile/abc123":              true,
		"":  true,
		"*": false,
		"arn:aws:bedrock:us-east-1::foundation-model/*":        false,
		"arn:aws:bedrock:us-east-1:123456789012:*":             false,
		"arn:aws:bedrock:us-east-1:123456789012:guardrail/abc": false,
		"arn:aws:s3:::bucket/foundation-model/x":               false,
	} {
		if re.MatchString(arn) != ok {
			t.Errorf("BedrockModelArns AllowedPattern accepts %q: %v, want %v", arn, !ok, ok)
		}
	}
	// The gateway counts tokens too (POST /v1/responses/input_tokens).
	invoke := []string{"bedrock:InvokeModel", "bedrock:InvokeModelWithResponseStream"}
	for id, actions := range map[string][]string{"GatewayFunction": append(slices.Clone(invoke), "bedrock:CountTokens"), "WorkerFunction": invoke} {
		found := false
		for _, p := range asList(tpl.fnProp(id, "Policies")) {
			for _, raw := range asList(get(p, "Statement")) {
				cond, yes, _, isIf := ifCond(raw)
				if !isIf || asString(get(yes, "Sid")) != "BedrockModels" {
					continue
				}
				found = true
				if cond != "HasBedrockModels" {
					t.Errorf("%s BedrockModels: under condition %s, want HasBedrockModels", id, cond)
				}
				if got := asStrings(get(yes, "Action")); !slices.Equal(got, actions) {
					t.Errorf("%s BedrockModels: actions %v", id, got)
				}
				if !isRef(get(yes, "Resource"), "BedrockModelArns") {
					t.Errorf("%s BedrockModels: resource %v, want !Ref BedrockModelArns", id, get(yes, "Resource"))
				}
			}
		}
		if !found {
			t.Errorf("%s has no BedrockModels statement", id)
		}
		if cond, yes, _, ok := ifCond(tpl.env(id)["LAMBENT_BEDROCK_GUARDRAIL_ID"]); !ok || cond != "HasBedrockGuardrail" || !isRef(yes, "BedrockGuardrailId") {
			t.Errorf("%s: LAMBENT_BEDROCK_GUARDRAIL_ID = %v, want !If [HasBedrockGuardrail, !Ref BedrockGuardrailId, ...]", id, tpl.env(id)["LAMBENT_BEDROCK_GUARDRAIL_ID"])
		}
	}
}

// ---------------------------------------------------------------- data

// storeSchema reads pkg/store/dynamodb's key and TTL attribute names.
func storeSchema(t *testing.T) map[string]string {
	t.Helper()
	consts := map[string]string{}
	files, err := filepath.Glob(filepath.Join(root, "pkg", "store", "dynamodb", "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range files {
		if strings.HasSuffix(p, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), p, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.CONST {
				continue
			}
			for _, s := range g.Specs {
				vs := s.(*ast.ValueSpec)
				for i, n := range vs.Names {
					if i < len(vs.Values) {
						if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
							consts[n.Name], _ = strconv.Unquote(lit.Value)
						}
					}
				}
			}
		}
	}
	for _, c := range []string{"attrPK", "attrSK", "attrExpiresAt"} {
		if consts[c] == "" {
			t.Fatalf("pkg/store/dynamodb no longer declares the string constant %s; update storeSchema in deploy/template_test.go to where the key schema lives", c)
		}
	}
	return consts
}

func TestResponsesTable(t *testing.T) {
	tpl := loadTemplate(t)
	schema := storeSchema(t)
	pk, sk, ttl := schema["attrPK"], schema["attrSK"], schema["attrExpiresAt"]
	r := tpl.resource(t, "ResponsesTable", "AWS::DynamoDB::Table")
	if r["DeletionPolicy"] != "Retain" || r["UpdateReplacePolicy"] != "Retain" {
		t.Errorf("DeletionPolicy %v / UpdateReplacePolicy %v, want Retain / Retain", r["DeletionPolicy"], r["UpdateReplacePolicy"])
	}
	props := asMap(r["Properties"])
	if props["BillingMode"] != "PAY_PER_REQUEST" {
		t.Errorf("BillingMode = %v, want PAY_PER_REQUEST", props["BillingMode"])
	}
	wantKeys := []any{
		map[string]any{"AttributeName": pk, "KeyType": "HASH"},
		map[string]any{"AttributeName": sk, "KeyType": "RANGE"},
	}
	if !reflect.DeepEqual(props["KeySchema"], wantKeys) {
		t.Errorf("KeySchema = %v, want %v (pkg/store/dynamodb)", props["KeySchema"], wantKeys)
	}
	wantAttrs := []any{
		map[string]any{"AttributeName": pk, "AttributeType": "S"},
		map[string]any{"AttributeName": sk, "AttributeType": "S"},
	}
	if !reflect.DeepEqual(props["AttributeDefinitions"], wantAttrs) {
		t.Errorf("AttributeDefinitions = %v, want %v", props["AttributeDefinitions"], wantAttrs)
	}
	if got := props["TimeToLiveSpecification"]; !reflect.DeepEqual(got, map[string]any{"AttributeName": ttl, "Enabled": true}) {
		t.Errorf("TimeToLiveSpecification = %v, want %s enabled", got, ttl)
	}
	if got := get(props, "PointInTimeRecoverySpecification", "PointInTimeRecoveryEnabled"); got != true {
		t.Errorf("point-in-time recovery = %v, want true", got)
	}
	if got := get(props, "SSESpecification", "SSEEnabled"); got != true {
		t.Errorf("SSEEnabled = %v, want true", got)
	}
}

func TestQueueAndWorkerTriggers(t *testing.T) {
	tpl := loadTemplate(t)
	workerTimeout, _ := asInt(tpl.fnProp("WorkerFunction", "Timeout"))
	if workerTimeout != 900 {
		t.Errorf("WorkerFunction Timeout = %d, want 900", workerTimeout)
	}
	q := asMap(get(tpl.resource(t, "ResponsesQueue", "AWS::SQS::Queue"), "Properties"))
	vis, _ := asInt(q["VisibilityTimeout"])
	if vis < 6*workerTimeout || vis > 43200 {
		t.Errorf("ResponsesQueue VisibilityTimeout = %d, want at least 6 x the worker's %d s (and at most 43200)", vis, workerTimeout)
	}
	redrive := asMap(q["RedrivePolicy"])
	if r, a, ok := getAtt(redrive["deadLetterTargetArn"]); !ok || r != "ResponsesDLQ" || a != "Arn" {
		t.Errorf("RedrivePolicy deadLetterTargetArn = %v, want !GetAtt ResponsesDLQ.Arn", redrive["deadLetterTargetArn"])
	}
	if n, _ := asInt(redrive["maxReceiveCount"]); n != 5 {
		t.Errorf("maxReceiveCount = %v, want 5", redrive["maxReceiveCount"])
	}
	dlq := asMap(get(tpl.resource(t, "ResponsesDLQ", "AWS::SQS::Queue"), "Properties"))
	qRet, _ := asInt(q["MessageRetentionPeriod"])
	dRet, _ := asInt(dlq["MessageRetentionPeriod"])
	if qRet == 0 || dRet <= qRet {
		t.Errorf("retention: queue %d s, dead-letter queue %d s; the DLQ's must be longer", qRet, dRet)
	}

	var sqsTrigger bool
	for _, id := range tpl.ofType("AWS::Lambda::EventSourceMapping") {
		p := asMap(get(tpl.resources()[id], "Properties"))
		r, _, _ := getAtt(p["EventSourceArn"])
		if r != "ResponsesQueue" {
			continue
		}
		sqsTrigger = true
		if !isRef(p["FunctionName"], "WorkerFunction") {
			t.Errorf("%s: ResponsesQueue triggers %v, want WorkerFunction", id, p["FunctionName"])
		}
		if !slices.Contains(asStrings(p["FunctionResponseTypes"]), "ReportBatchItemFailures") {
			t.Errorf("%s: FunctionResponseTypes = %v, want ReportBatchItemFailures", id, p["FunctionResponseTypes"])
		}
		// Messages beyond this wait in the queue rather than being throttled.
		if got := get(p, "ScalingConfig", "MaximumConcurrency"); !isRef(got, "WorkerQueueMaxConcurrency") {
			t.Errorf("%s: ScalingConfig.MaximumConcurrency = %v, want !Ref WorkerQueueMaxConcurrency", id, got)
		}
		mc := tpl.param(t, "WorkerQueueMaxConcurrency")
		if lo, _ := asInt(mc["MinValue"]); lo < 2 {
			t.Errorf("WorkerQueueMaxConcurrency MinValue = %v, want at least 2 (the SQS event source minimum)", mc["MinValue"])
		}
		if hi, ok := asInt(mc["MaxValue"]); !ok || hi > 1000 {
			t.Errorf("WorkerQueueMaxConcurrency MaxValue = %v, want at most 1000 (the SQS event source maximum)", mc["MaxValue"])
		}
	}
	if !sqsTrigger {
		t.Error("no event source mapping from ResponsesQueue to WorkerFunction")
	}

	tpl.resource(t, "LambentBus", "AWS::Events::EventBus")
	var rule bool
	for name, ev := range asMap(get(tpl.resources()["WorkerFunction"], "Properties", "Events")) {
		if get(ev, "Type") != "EventBridgeRule" {
			continue
		}
		rule = true
		p := asMap(get(ev, "Properties"))
		if !isRef(p["EventBusName"], "LambentBus") {
			t.Errorf("event %s: EventBusName = %v, want !Ref LambentBus", name, p["EventBusName"])
		}
		want := map[string]any{"source": []any{"lambent.requests"}, "detail-type": []any{"lambent.response.create"}}
		if !reflect.DeepEqual(p["Pattern"], want) {
			t.Errorf("event %s: Pattern = %v, want %v", name, p["Pattern"], want)
		}
	}
	if !rule {
		t.Error("WorkerFunction has no EventBridgeRule event")
	}
}

// ---------------------------------------------------------------- logs, outputs

func TestLogGroups(t *testing.T) {
	tpl := loadTemplate(t)
	if p := tpl.param(t, "LogRetentionInDays"); p["Default"] != 30 {
		t.Errorf("LogRetentionInDays default = %v, want 30", p["Default"])
	}
	used := map[string]string{}
	for _, id := range tpl.functions() {
		lg := get(tpl.fnProp(id, "LoggingConfig"), "LogGroup")
		name, _ := asMap(lg)["Ref"].(string)
		if name == "" {
			t.Errorf("%s: LoggingConfig.LogGroup = %v, want !Ref to its log group", id, lg)
			continue
		}
		if other, dup := used[name]; dup {
			t.Errorf("%s and %s share the log group %s", id, other, name)
		}
		used[name] = id
		r := tpl.resource(t, name, "AWS::Logs::LogGroup")
		if got := get(r, "Properties", "RetentionInDays"); !isRef(got, "LogRetentionInDays") {
			t.Errorf("%s: RetentionInDays = %v, want !Ref LogRetentionInDays", name, got)
		}
	}
}

func TestOutputs(t *testing.T) {
	tpl := loadTemplate(t)
	out := func(name string) any {
		v := get(tpl, "Outputs", name, "Value")
		if v == nil {
			t.Errorf("output %s missing", name)
		}
		return v
	}
	if s, _ := sub(out("FunctionUrl")); s != "${GatewayFunctionUrl.FunctionUrl}v1" {
		t.Errorf("FunctionUrl = %v, want the function URL (it ends in /) followed by v1", s)
	}
	if s, _ := sub(out("RestApiUrl")); !strings.HasPrefix(s, "https://${RestApi}.execute-api.${AWS::Region}.") || !strings.HasSuffix(s, "/${RestApiStage}/v1") {
		t.Errorf("RestApiUrl = %v, want https://${RestApi}.execute-api.${AWS::Region}.<suffix>/${RestApiStage}/v1", s)
	}
	if v := out("TableName"); !isRef(v, "ResponsesTable") {
		t.Errorf("TableName = %v, want !Ref ResponsesTable", v)
	}
	if v := out("QueueUrl"); !isRef(v, "ResponsesQueue") {
		t.Errorf("QueueUrl = %v, want !Ref ResponsesQueue", v)
	}
}

// The parser itself: short tags become CloudFormation's long forms.
func TestParseShortTags(t *testing.T) {
	src := `
A: !Ref X
B: !GetAtt R.Arn
C: !Sub "x${Y}"
D: !If [Cond, !Ref Y, !Ref AWS::NoValue]
E: !Equals [!Ref P, NONE]
F: !GetAtt [R, Arn]
G: 3
H: true
I: &a {k: v}
J: *a
`
	got, err := parseTemplate([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	want := cfnTemplate{
		"A": map[string]any{"Ref": "X"},
		"B": map[string]any{"Fn::GetAtt": []any{"R", "Arn"}},
		"C": map[string]any{"Fn::Sub": "x${Y}"},
		"D": map[string]any{"Fn::If": []any{"Cond", map[string]any{"Ref": "Y"}, map[string]any{"Ref": "AWS::NoValue"}}},
		"E": map[string]any{"Fn::Equals": []any{map[string]any{"Ref": "P"}, "NONE"}},
		"F": map[string]any{"Fn::GetAtt": []any{"R", "Arn"}},
		"G": 3,
		"H": true,
		"I": map[string]any{"k": "v"},
		"J": map[string]any{"k": "v"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("parsed\n%#v\nwant\n%#v", got, want)
	}
	for _, bad := range []string{"A: !Bogus x", "A: 1\nA: 2", "A: !GetAtt NoDot"} {
		if _, err := parseTemplate([]byte(bad)); err == nil {
			t.Errorf("%q parsed without error", bad)
		}
	}
}

// TestQueuesReachTheirDeadLetterQueue: for every queue with a redrive
// policy, a message that keeps failing reaches its dead-letter queue
// before it expires (maxReceiveCount × VisibilityTimeout under the
// retention period, else no alarm on the dead-letter queue can fire), the
// dead-letter queue keeps it at least as long, and every function the
// queue triggers finishes within the visibility timeout (else a message
// is delivered again while it still runs).
func TestQueuesReachTheirDeadLetterQueue(t *testing.T) {
	tpl := loadTemplate(t)
	checked := 0
	for _, id := range tpl.ofType("AWS::SQS::Queue") {
		q := asMap(get(tpl.resources()[id], "Properties"))
		redrive := asMap(q["RedrivePolicy"])
		if redrive == nil {
			continue
		}
		checked++
		vis, _ := asInt(q["VisibilityTimeout"])
		retention, _ := asInt(q["MessageRetentionPeriod"])
		receives, _ := asInt(redrive["maxReceiveCount"])
		if vis == 0 || retention == 0 || receives == 0 {
			t.Errorf("%s: VisibilityTimeout %v, MessageRetentionPeriod %v, maxReceiveCount %v: want each set", id, q["VisibilityTimeout"], q["MessageRetentionPeriod"], redrive["maxReceiveCount"])
			continue
		}
		if vis*receives >= retention {
			t.Errorf("%s: %d receives x %d s visibility = %d s, not under its retention of %d s: a failing message expires before its dead-letter queue", id, receives, vis, vis*receives, retention)
		}
		dlq, _, _ := getAtt(redrive["deadLetterTargetArn"])
		if dlqRetention, _ := asInt(get(tpl.resources()[dlq], "Properties", "MessageRetentionPeriod")); dlqRetention < retention {
			t.Errorf("%s: dead-letter queue %s keeps messages %d s, less than the queue's %d s", id, dlq, dlqRetention, retention)
		}
		for _, m := range tpl.ofType("AWS::Lambda::EventSourceMapping") {
			p := asMap(get(tpl.resources()[m], "Properties"))
			if r, _, _ := getAtt(p["EventSourceArn"]); r != id {
				continue
			}
			fn := asMap(p["FunctionName"])["Ref"]
			name, _ := fn.(string)
			if timeout, _ := asInt(tpl.fnProp(name, "Timeout")); timeout == 0 || timeout >= vis {
				t.Errorf("%s triggers %s, whose Timeout %d s is not under the queue's visibility timeout of %d s", id, name, timeout, vis)
			}
		}
	}
	if checked < 2 {
		t.Fatalf("checked %d queues with a redrive policy, want the responses and the WebSocket turns queues", checked)
	}
}
