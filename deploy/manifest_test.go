package deploy_test

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/lambent/lambent/pkg/tools"
	"github.com/lambent/lambent/pkg/tools/builtin"
	"github.com/lambent/lambent/pkg/tools/lambdaexec"
)

// repoRoot is the repository root, seen from this package's directory.
const repoRoot = ".."

// TestToolFunctionsOneSourceOfTruth holds the hosted tools of the code, the
// tool functions of template.yaml, the tool manifest the template gives the
// gateway and the worker (LAMBENT_TOOLS) and the mains under
// functions/tools/ to one another, so that none can drift:
//
//   - a tool function is a function whose build (`make -n
//     build-<LogicalId>`, mk/sam.mk) or CodeUri is functions/tools/<tool>,
//     and its logical ID is lambdaexec.FunctionLogicalID(<tool>) (the name
//     `sam local start-lambda` serves it under, which `make lambdas` serves
//     too, so lambdaexec.LocalManifest works against either);
//   - every functions/tools/<dir> main is deployed as a tool function;
//   - every built-in tool (builtin.DefaultManifest) has a tool function;
//   - the manifest of every function that has one lists every tool function
//     under its tool name with a lambda backing pointing at exactly that
//     function (${Fn.Arn} or ${Fn}), and nothing else.
func TestToolFunctionsOneSourceOfTruth(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Fatal("make is needed to expand the build targets of mk/sam.mk:", err)
	}
	tpl, err := parseTemplateFile(filepath.Join(repoRoot, "template.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range checkToolFunctions(tpl, repoRoot) {
		t.Error(p)
	}
}

// checkToolFunctions returns every disagreement between tpl, the code and
// the tool mains under root (see TestToolFunctionsOneSourceOfTruth).
func checkToolFunctions(tpl template, root string) (problems []string) {
	errorf := func(format string, a ...any) { problems = append(problems, fmt.Sprintf(format, a...)) }
	fns := tpl.functions()
	if len(fns) == 0 {
		errorf("template.yaml declares no AWS::Serverless::Function")
		return problems
	}

	// Tool functions, from where their code comes from.
	toolOf := map[string]string{} // logical ID -> tool (functions/tools/<tool>)
	for _, id := range fns {
		dir, err := tpl.sourceDir(root, id)
		if err != nil {
			errorf("%v", err)
			continue
		}
		tool, ok := strings.CutPrefix(dir, "functions/tools/")
		if !ok {
			continue
		}
		tool = strings.Trim(tool, "/")
		toolOf[id] = tool
		if want := lambdaexec.FunctionLogicalID(tool); id != want {
			errorf("%s builds functions/tools/%s: name it %s (lambdaexec.FunctionLogicalID), the name local endpoints serve it under", id, tool, want)
		}
		if !hasMain(filepath.Join(root, dir)) {
			errorf("%s builds %s, which holds no main package", id, dir)
		}
	}
	if len(toolOf) == 0 {
		errorf("template.yaml has no tool function (no function builds functions/tools/...)")
	}
	functionOf := map[string]string{} // tool -> logical ID
	for id, tool := range toolOf {
		if other, dup := functionOf[tool]; dup {
			errorf("%s and %s both build functions/tools/%s", id, other, tool)
		}
		functionOf[tool] = id
	}

	// Every tool main is deployed.
	entries, err := os.ReadDir(filepath.Join(root, "functions", "tools"))
	if err != nil {
		errorf("%v", err)
	}
	for _, e := range entries {
		if e.IsDir() && hasMain(filepath.Join(root, "functions", "tools", e.Name())) {
			if _, ok := functionOf[e.Name()]; !ok {
				errorf("functions/tools/%s is no function of template.yaml: add %s", e.Name(), lambdaexec.FunctionLogicalID(e.Name()))
			}
		}
	}

	// Every built-in tool has a tool function (and so a main).
	builtins := builtin.Tools(builtin.Config{})
	for _, mt := range builtin.DefaultManifest().Tools {
		if _, ok := builtins[mt.Name]; !ok {
			errorf("builtin.DefaultManifest lists %s, which builtin.Tools lacks", mt.Name)
		}
		if _, ok := functionOf[mt.Name]; !ok {
			errorf("built-in tool %s has no tool function: add functions/tools/%s and %s to template.yaml", mt.Name, mt.Name, lambdaexec.FunctionLogicalID(mt.Name))
		}
	}

	// The manifests: the gateway's is required, any other must agree.
	withManifest := []string{}
	for _, id := range fns {
		if tpl.envNode(id, "LAMBENT_TOOLS") != nil {
			withManifest = append(withManifest, id)
		}
	}
	if !slices.Contains(withManifest, "GatewayFunction") {
		errorf("GatewayFunction has no LAMBENT_TOOLS (functions with one: %v)", withManifest)
	}
	for _, id := range withManifest {
		m, refs, err := resolveManifest(tpl.envNode(id, "LAMBENT_TOOLS"))
		if err != nil {
			errorf("%s: LAMBENT_TOOLS: %v", id, err)
			continue
		}
		listed := map[string]bool{}
		for _, mt := range m.Tools {
			fn, isRef := refs[mt.Backing.Function]
			switch {
			case mt.Backing.Type != tools.BackingLambda:
				errorf("%s: LAMBENT_TOOLS: tool %s has backing %q; in AWS every tool is its own Lambda function", id, mt.Name, mt.Backing.Type)
			case !isRef:
				errorf("%s: LAMBENT_TOOLS: tool %s invokes %q, not a function of this template (${Fn.Arn})", id, mt.Name, mt.Backing.Function)
			case toolOf[fn] == "":
				errorf("%s: LAMBENT_TOOLS: tool %s invokes %s, which is no tool function", id, mt.Name, fn)
			case toolOf[fn] != mt.Name:
				errorf("%s: LAMBENT_TOOLS: tool %s invokes %s, which serves functions/tools/%s", id, mt.Name, fn, toolOf[fn])
			default:
				listed[fn] = true
			}
			if _, builtinTool := builtins[mt.Name]; !builtinTool && (mt.Description == "" || len(mt.Parameters) == 0) {
				errorf("%s: LAMBENT_TOOLS: tool %s is no built-in, so the manifest must give its description and parameters", id, mt.Name)
			}
		}
		for fn, tool := range toolOf {
			if !listed[fn] {
				errorf("%s: LAMBENT_TOOLS does not list tool %s (function %s)", id, tool, fn)
			}
		}
	}
	return problems
}

// TestToolFunctionsDrift feeds the checker mutated copies of template.yaml:
// each disagreement must be reported.
func TestToolFunctionsDrift(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Fatal("make is needed to expand the build targets of mk/sam.mk:", err)
	}
	data, err := os.ReadFile(filepath.Join(repoRoot, "template.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	orig := string(data)
	fetchEntry := `,{"name":"fetch_url","backing":{"type":"lambda","function":"${FetchUrlToolFunction.Arn}"}}`
	for _, tc := range []struct {
		name     string
		old, new string
		want     string
	}{
		{"tool missing from the manifest", fetchEntry, "", "LAMBENT_TOOLS does not list tool fetch_url"},
		{"tool backed by another function", `"name":"calculator","backing":{"type":"lambda","function":"${CalculatorToolFunction.Arn}"}`,
			`"name":"calculator","backing":{"type":"lambda","function":"${FetchUrlToolFunction.Arn}"}`, "tool calculator invokes FetchUrlToolFunction, which serves functions/tools/fetch_url"},
		{"local backing in AWS", `"name":"calculator","backing":{"type":"lambda","function":"${CalculatorToolFunction.Arn}"}`,
			`"name":"calculator","backing":{"type":"local"}`, `tool calculator has backing "local"`},
		{"function outside the template", "${FetchUrlToolFunction.Arn}", "arn:aws:lambda:us-east-1:1:function:elsewhere", `invokes "arn:aws:lambda:us-east-1:1:function:elsewhere", not a function of this template`},
		{"tool function gone", "  FetchUrlToolFunction:\n    Type: AWS::Serverless::Function", "  FetchUrlToolFunction:\n    Type: AWS::Lambda::Function", "built-in tool fetch_url has no tool function"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !strings.Contains(orig, tc.old) {
				t.Fatalf("template.yaml no longer contains %q: update this test", tc.old)
			}
			tpl, err := parseTemplate([]byte(strings.ReplaceAll(orig, tc.old, tc.new)))
			if err != nil {
				t.Fatal(err)
			}
			problems := checkToolFunctions(tpl, repoRoot)
			if !slices.ContainsFunc(problems, func(p string) bool { return strings.Contains(p, tc.want) }) {
				t.Fatalf("problems %q lack %q", problems, tc.want)
			}
		})
	}
}

// TestResolveManifest checks the !Sub handling of the test itself.
func TestResolveManifest(t *testing.T) {
	for _, tc := range []struct {
		yaml string
		want map[string]string // placeholder function -> logical ID
		err  bool
	}{
		{`!Sub '{"tools":[{"name":"a","backing":{"type":"lambda","function":"${AToolFunction.Arn}"}}]}'`, map[string]string{"AToolFunction": "AToolFunction"}, false},
		{`{"Fn::Sub": '{"tools":[{"name":"a","backing":{"type":"lambda","function":"${AToolFunction}"}}]}'}`, map[string]string{"AToolFunction": "AToolFunction"}, false},
		{`!Sub ['{"tools":[{"name":"a","backing":{"type":"lambda","function":"${F}"}}]}', {F: !GetAtt AToolFunction.Arn}]`, map[string]string{"AToolFunction": "AToolFunction"}, false},
		{`'{"tools":[{"name":"a","backing":{"type":"local"}}]}'`, map[string]string{}, false},
		{`!Sub '{"tools":[{"name":"a","backing":{"type":"lambda","function":"${AWS::Region}"}}]}'`, nil, true},
		{`!Sub '{"tools": ['`, nil, true},
	} {
		var n yaml.Node
		if err := yaml.Unmarshal([]byte(tc.yaml), &n); err != nil {
			t.Fatal(err)
		}
		m, refs, err := resolveManifest(n.Content[0])
		if (err != nil) != tc.err {
			t.Errorf("%s: error %v, want error %v", tc.yaml, err, tc.err)
			continue
		}
		if err != nil {
			continue
		}
		got := map[string]string{}
		for _, mt := range m.Tools {
			if fn, ok := refs[mt.Backing.Function]; ok {
				got[fn] = fn
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("%s: functions %v, want %v", tc.yaml, got, tc.want)
		}
	}
}

// ----------------------------------------------------------------- helpers

// template is template.yaml as a YAML node tree: CloudFormation short tags
// (!Sub, !Ref, !GetAtt, ...) stay on the nodes as tags.
type template struct{ root *yaml.Node }

func parseTemplateFile(path string) (template, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return template{}, err
	}
	return parseTemplate(data)
}

func parseTemplate(data []byte) (template, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return template{}, fmt.Errorf("template.yaml: %w", err)
	}
	if len(doc.Content) == 0 {
		return template{}, fmt.Errorf("template.yaml is empty")
	}
	return template{root: doc.Content[0]}, nil
}

// child returns the value of key in a mapping node (nil when absent).
func child(n *yaml.Node, keys ...string) *yaml.Node {
	for _, k := range keys {
		if n == nil || n.Kind != yaml.MappingNode {
			return nil
		}
		var next *yaml.Node
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == k {
				next = n.Content[i+1]
				break
			}
		}
		n = next
	}
	return n
}

// functions returns the logical IDs of the AWS::Serverless::Functions.
func (tpl template) functions() []string {
	res := child(tpl.root, "Resources")
	if res == nil {
		return nil
	}
	var ids []string
	for i := 0; i+1 < len(res.Content); i += 2 {
		if typ := child(res.Content[i+1], "Type"); typ != nil && typ.Value == "AWS::Serverless::Function" {
			ids = append(ids, res.Content[i].Value)
		}
	}
	sort.Strings(ids)
	return ids
}

// fnProp returns a function property, falling back to Globals.Function.
func (tpl template) fnProp(id string, keys ...string) *yaml.Node {
	if n := child(tpl.root, append([]string{"Resources", id, "Properties"}, keys...)...); n != nil {
		return n
	}
	return child(tpl.root, append([]string{"Globals", "Function"}, keys...)...)
}

// envNode returns a function's environment variable node.
func (tpl template) envNode(id, name string) *yaml.Node {
	return child(tpl.root, "Resources", id, "Properties", "Environment", "Variables", name)
}

var functionDirRE = regexp.MustCompile(`\./(functions/[A-Za-z0-9_./-]+)`)

// sourceDir returns the functions/... directory a function is built from:
// its CodeUri when that names one, else the package its makefile build
// target (`make -n build-<LogicalId>` in root) compiles.
func (tpl template) sourceDir(root, id string) (string, error) {
	if uri := tpl.fnProp(id, "CodeUri"); uri != nil && uri.Kind == yaml.ScalarNode {
		if dir := strings.TrimPrefix(filepath.ToSlash(filepath.Clean(uri.Value)), "./"); strings.HasPrefix(dir, "functions/") {
			return dir, nil
		}
	}
	if bm := child(tpl.root, "Resources", id, "Metadata", "BuildMethod"); bm == nil || bm.Value != "makefile" {
		return "", fmt.Errorf("%s: neither its CodeUri nor a makefile build names its functions/ directory", id)
	}
	cmd := exec.Command("make", "--no-print-directory", "-s", "-n", "-C", root, "build-"+id, "ARTIFACTS_DIR=/artifacts")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("%s: make -n build-%s: %w\n%s", id, id, err, stderr.String())
	}
	m := functionDirRE.FindStringSubmatch(string(out))
	if m == nil {
		return "", fmt.Errorf("%s: build-%s compiles no ./functions/... package: %s", id, id, out)
	}
	return strings.TrimSuffix(m[1], "/"), nil
}

var packageMainRE = regexp.MustCompile(`(?m)^package main\b`)

// hasMain reports whether dir holds a non-test Go file of package main.
func hasMain(dir string) bool {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return false
	}
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(filepath.Join(dir, name))
		if err == nil && packageMainRE.Match(src) {
			return true
		}
	}
	return false
}

var subVarRE = regexp.MustCompile(`\$\{([^}!][^}]*)\}`)

// resolveManifest turns a LAMBENT_TOOLS value (a plain string, !Sub in its
// string or list form, or Fn::Sub) into the manifest it deploys as: every
// ${Fn.Arn} or ${Fn} (directly or through a !Sub variable bound to !GetAtt
// Fn.Arn or !Ref Fn) becomes a placeholder function name, and refs maps
// each placeholder back to the logical ID Fn. Any other substitution is an
// error: a manifest names functions of this template only.
func resolveManifest(n *yaml.Node) (*tools.Manifest, map[string]string, error) {
	src, vars, err := subSource(n)
	if err != nil {
		return nil, nil, err
	}
	refs := map[string]string{}
	var bad []string
	doc := subVarRE.ReplaceAllStringFunc(src, func(v string) string {
		name := subVarRE.FindStringSubmatch(v)[1]
		target := name
		if bound, ok := vars[name]; ok {
			target = bound
		}
		fn, attr, hasAttr := strings.Cut(target, ".")
		if (hasAttr && attr != "Arn") || strings.Contains(fn, "::") {
			bad = append(bad, name)
			return v
		}
		placeholder := "arn:aws:lambda:us-east-1:123456789012:function:" + fn
		refs[placeholder] = fn
		return placeholder
	})
	if len(bad) > 0 {
		return nil, nil, fmt.Errorf("substitutes %v; only ${<Function>.Arn} or ${<Function>} belong in a tool manifest", bad)
	}
	m, err := tools.ParseManifest([]byte(doc))
	if err != nil {
		return nil, nil, err
	}
	return m, refs, nil
}

// subSource returns the template string of a (possibly !Sub) scalar and the
// variables of the list form, each as "Fn.Arn" (!GetAtt) or "Fn" (!Ref).
func subSource(n *yaml.Node) (string, map[string]string, error) {
	vars := map[string]string{}
	switch {
	case n.Kind == yaml.MappingNode && len(n.Content) == 2 && n.Content[0].Value == "Fn::Sub":
		return subSource(&yaml.Node{Kind: n.Content[1].Kind, Tag: "!Sub", Value: n.Content[1].Value, Content: n.Content[1].Content})
	case n.Kind == yaml.ScalarNode && (n.Tag == "!Sub" || n.Tag == "!!str" || n.Tag == ""):
		return n.Value, vars, nil
	case n.Kind == yaml.SequenceNode && n.Tag == "!Sub" && len(n.Content) == 2 && n.Content[0].Kind == yaml.ScalarNode:
		m := n.Content[1]
		for i := 0; i+1 < len(m.Content); i += 2 {
			v := m.Content[i+1]
			switch {
			case v.Tag == "!GetAtt" && v.Kind == yaml.ScalarNode:
				vars[m.Content[i].Value] = v.Value
			case v.Tag == "!Ref" && v.Kind == yaml.ScalarNode:
				vars[m.Content[i].Value] = v.Value
			default:
				vars[m.Content[i].Value] = "unsupported::" + v.Tag
			}
		}
		return n.Content[0].Value, vars, nil
	}
	return "", nil, fmt.Errorf("want a string or !Sub, got %s %s", n.Tag, kindName(n.Kind))
}

func kindName(k yaml.Kind) string {
	switch k {
	case yaml.ScalarNode:
		return "scalar"
	case yaml.SequenceNode:
		return "sequence"
	case yaml.MappingNode:
		return "mapping"
	}
	return fmt.Sprint(k)
}
