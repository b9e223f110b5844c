package deploy

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/lambent/lambent/pkg/api"
	"github.com/lambent/lambent/pkg/telemetry"
)

// ------------------------------------------------- REST API deployment

// apiDefinitionTypes are the resource types a REST API deployment
// snapshots: a change to any of them needs a new deployment.
var apiDefinitionTypes = []string{
	"AWS::ApiGateway::RestApi", "AWS::ApiGateway::Resource", "AWS::ApiGateway::Method",
	"AWS::ApiGateway::GatewayResponse", "AWS::ApiGateway::Model", "AWS::ApiGateway::RequestValidator",
	"AWS::ApiGateway::Authorizer",
}

// apiHash is a short hash of the REST API's definition: the logical ids,
// types and properties of its resources.
func (tpl cfnTemplate) apiHash(t *testing.T) string {
	t.Helper()
	def := map[string]any{}
	for _, typ := range apiDefinitionTypes {
		for _, id := range tpl.ofType(typ) {
			def[id] = map[string]any{"Type": typ, "Properties": get(tpl.resources()[id], "Properties")}
		}
	}
	b, err := json.Marshal(def) // map keys sorted: canonical
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:4])
}

// TestRestAPIDeploymentTracksTheAPI: the stage serves a deployment whose
// logical id carries the hash of the API's definition, so any change to
// the API makes CloudFormation create a new deployment (and the stage serve
// it); the auth type, a parameter, picks one of two deployments.
func TestRestAPIDeploymentTracksTheAPI(t *testing.T) {
	tpl := loadTemplate(t)
	h := tpl.apiHash(t)
	want := map[string]string{"RestApiDeploymentIam" + h: "IsIamRestApi", "RestApiDeploymentNone" + h: "IsPublicRestApi"}
	var wantIDs []string
	for id := range want {
		wantIDs = append(wantIDs, id)
	}
	sort.Strings(wantIDs)
	got := tpl.ofType("AWS::ApiGateway::Deployment")
	if !reflect.DeepEqual(got, wantIDs) {
		t.Fatalf("REST API deployments %v, want %v: the API's definition changed, so the stage needs a new deployment; "+
			"replace the old hash with %s everywhere in template.yaml", got, wantIDs, h)
	}
	for id, cond := range want {
		r := asMap(tpl.resources()[id])
		if r["Condition"] != cond {
			t.Errorf("%s: Condition = %v, want %s", id, r["Condition"], cond)
		}
		if !isRef(get(r, "Properties", "RestApiId"), "RestApi") {
			t.Errorf("%s: RestApiId = %v, want !Ref RestApi", id, get(r, "Properties", "RestApiId"))
		}
		if d := asString(get(r, "Properties", "Description")); !strings.Contains(d, h) {
			t.Errorf("%s: Description %q does not name the API hash %s", id, d, h)
		}
	}
	conds := asMap(tpl["Conditions"])
	if c := conds["IsPublicRestApi"]; !reflect.DeepEqual(c, map[string]any{"Fn::Equals": []any{map[string]any{"Ref": "RestApiAuthType"}, "NONE"}}) {
		t.Errorf("IsPublicRestApi = %v, want RestApiAuthType equals NONE", c)
	}
	if c := conds["IsIamRestApi"]; !reflect.DeepEqual(c, map[string]any{"Fn::Not": []any{map[string]any{"Condition": "IsPublicRestApi"}}}) {
		t.Errorf("IsIamRestApi = %v, want the negation of IsPublicRestApi", c)
	}
	stage := asMap(get(tpl.resources()["RestApiStage"], "Properties"))
	wantDep := map[string]any{"Fn::If": []any{"IsPublicRestApi",
		map[string]any{"Ref": "RestApiDeploymentNone" + h}, map[string]any{"Ref": "RestApiDeploymentIam" + h}}}
	if !reflect.DeepEqual(stage["DeploymentId"], wantDep) {
		t.Errorf("RestApiStage DeploymentId = %v, want %v", stage["DeploymentId"], wantDep)
	}

	// The hash sees a change of any method.
	changed := loadTemplate(t)
	in := asMap(get(changed.resources()["RestApiGetResponseMethod"], "Properties", "Integration"))
	in["TimeoutInMillis"] = 600000
	if changed.apiHash(t) == h {
		t.Error("changing a method's integration did not change the API hash")
	}
}

// TestRestAPIStageThrottlingAndAccessLogs: the stage throttles every
// method with the documented parameters and writes JSON access logs to a
// log group with the stack's retention.
func TestRestAPIStageThrottlingAndAccessLogs(t *testing.T) {
	tpl := loadTemplate(t)
	stage := asMap(get(tpl.resource(t, "RestApiStage", "AWS::ApiGateway::Stage"), "Properties"))
	settings := asList(stage["MethodSettings"])
	if len(settings) != 1 {
		t.Fatalf("MethodSettings = %v, want one entry for every method", settings)
	}
	ms := asMap(settings[0])
	if ms["ResourcePath"] != "/*" || ms["HttpMethod"] != "*" {
		t.Errorf("MethodSettings applies to %v %v, want every method (/* and *)", ms["HttpMethod"], ms["ResourcePath"])
	}
	for prop, param := range map[string]string{"ThrottlingRateLimit": "RestApiThrottleRateLimit", "ThrottlingBurstLimit": "RestApiThrottleBurstLimit"} {
		if !isRef(ms[prop], param) {
			t.Errorf("MethodSettings %s = %v, want !Ref %s", prop, ms[prop], param)
		}
		p := tpl.param(t, param)
		if min, ok := asInt(p["MinValue"]); !ok || min < 1 {
			t.Errorf("%s MinValue = %v, want at least 1 (0 refuses every request)", param, p["MinValue"])
		}
		if def, ok := asInt(p["Default"]); !ok || def < 1 {
			t.Errorf("%s Default = %v, want a positive number", param, p["Default"])
		}
	}

	cond, yes, no, ok := ifCond(stage["AccessLogSetting"])
	if !ok || cond != "HasRestApiAccessLogs" || !isRef(no, "AWS::NoValue") {
		t.Fatalf("AccessLogSetting = %v, want !If [HasRestApiAccessLogs, {...}, !Ref AWS::NoValue]", stage["AccessLogSetting"])
	}
	if c := get(tpl, "Conditions", cond); !reflect.DeepEqual(c, map[string]any{"Fn::Equals": []any{map[string]any{"Ref": "RestApiAccessLogs"}, "Enabled"}}) {
		t.Errorf("%s = %v, want RestApiAccessLogs equals Enabled", cond, c)
	}
	if p := tpl.param(t, "RestApiAccessLogs"); p["Default"] != "Enabled" || !reflect.DeepEqual(p["AllowedValues"], []any{"Enabled", "Disabled"}) {
		t.Errorf("RestApiAccessLogs: Default %v, AllowedValues %v, want Enabled of [Enabled Disabled]", p["Default"], p["AllowedValues"])
	}
	als := asMap(yes)
	group, attr, _ := getAtt(als["DestinationArn"])
	if attr != "Arn" {
		t.Fatalf("access log DestinationArn = %v, want !GetAtt <log group>.Arn", als["DestinationArn"])
	}
	lg := tpl.resource(t, group, "AWS::Logs::LogGroup")
	if lg["Condition"] != cond {
		t.Errorf("%s: Condition = %v, want %s", group, lg["Condition"], cond)
	}
	if got := get(lg, "Properties", "RetentionInDays"); !isRef(got, "LogRetentionInDays") {
		t.Errorf("%s: RetentionInDays = %v, want !Ref LogRetentionInDays", group, got)
	}
	format := asString(als["Format"])
	var fields map[string]string
	if err := json.Unmarshal([]byte(format), &fields); err != nil {
		t.Fatalf("access log Format is not one JSON object of strings: %v\n%s", err, format)
	}
	contextVar := regexp.MustCompile(`^\$context\.[A-Za-z.]+$`)
	for k, v := range fields {
		if !contextVar.MatchString(v) {
			t.Errorf("access log field %s = %q, want a $context variable", k, v)
		}
	}
	for _, v := range []string{"$context.requestId", "$context.status", "$context.identity.sourceIp", "$context.httpMethod",
		"$context.resourcePath", "$context.integration.error", "$context.error.responseType"} {
		if !slices.Contains(slices.Collect(mapValues(fields)), v) {
			t.Errorf("access log Format lacks %s", v)
		}
	}
}

func mapValues(m map[string]string) func(func(string) bool) {
	return func(yield func(string) bool) {
		for _, v := range m {
			if !yield(v) {
				return
			}
		}
	}
}

// ------------------------------------------------------------- Rules

// evalRule evaluates a Rules condition or assertion for the parameter
// values.
func evalRule(t *testing.T, v any, params map[string]string) any {
	t.Helper()
	m := asMap(v)
	if m == nil {
		return fmt.Sprint(v)
	}
	args := asList(m[firstKey(m)])
	bools := func() []bool {
		var out []bool
		for _, a := range args {
			b, ok := evalRule(t, a, params).(bool)
			if !ok {
				t.Fatalf("%v: operand %v is not a condition", v, a)
			}
			out = append(out, b)
		}
		return out
	}
	switch firstKey(m) {
	case "Ref":
		val, ok := params[asString(m["Ref"])]
		if !ok {
			t.Fatalf("Ref to %v, which is no parameter", m["Ref"])
		}
		return val
	case "Fn::Equals":
		return evalRule(t, args[0], params) == evalRule(t, args[1], params)
	case "Fn::Not":
		return !bools()[0]
	case "Fn::And":
		return !slices.Contains(bools(), false)
	case "Fn::Or":
		return slices.Contains(bools(), true)
	}
	t.Fatalf("evalRule does not know %v", v)
	return nil
}

func firstKey(m map[string]any) string {
	for k := range m {
		return k
	}
	return ""
}

// refused reports whether the template's Rules refuse the parameters (the
// defaults, overridden by set), and the descriptions of failed assertions.
func (tpl cfnTemplate) refused(t *testing.T, set map[string]string) []string {
	t.Helper()
	params := map[string]string{}
	for name, p := range asMap(tpl["Parameters"]) {
		params[name] = fmt.Sprint(get(p, "Default"))
	}
	for k, v := range set {
		params[k] = v
	}
	var failed []string
	for name, rule := range asMap(tpl["Rules"]) {
		if c := get(rule, "RuleCondition"); c != nil && !evalRule(t, c, params).(bool) {
			continue
		}
		for _, a := range asList(get(rule, "Assertions")) {
			if !evalRule(t, get(a, "Assert"), params).(bool) {
				failed = append(failed, name+": "+asString(get(a, "AssertDescription")))
			}
		}
	}
	return failed
}

// TestPublicFrontDoorsNeedAPIKeys: CloudFormation refuses a function URL
// or REST API without IAM auth unless ApiKeysParameter names the keys.
func TestPublicFrontDoorsNeedAPIKeys(t *testing.T) {
	tpl := loadTemplate(t)
	for _, url := range []string{"AWS_IAM", "NONE"} {
		for _, rest := range []string{"AWS_IAM", "NONE"} {
			for _, keys := range []string{"", "/lambent/api-keys"} {
				failed := tpl.refused(t, map[string]string{"FunctionUrlAuthType": url, "RestApiAuthType": rest, "ApiKeysParameter": keys})
				want := (url == "NONE" || rest == "NONE") && keys == ""
				if (len(failed) > 0) != want {
					t.Errorf("FunctionUrlAuthType=%s RestApiAuthType=%s ApiKeysParameter=%q: refused %v, want refused: %v", url, rest, keys, failed, want)
				}
				for _, f := range failed {
					if !strings.Contains(f, "ApiKeysParameter") {
						t.Errorf("assertion %q does not say to set ApiKeysParameter", f)
					}
				}
			}
		}
	}
}

// ------------------------------------------------ concurrency, alarms

// TestReservedConcurrency: the front-door and queue-driven functions each
// have a reserved-concurrency parameter, and every default reserves
// nothing: Lambda keeps 100 of an account's concurrency unreserved, so a
// fresh account (a quota of 10) can reserve none, and the stack must still
// deploy there. 0 maps to no ReservedConcurrentExecutions (Lambda's own 0
// would stop the function).
func TestReservedConcurrency(t *testing.T) {
	tpl := loadTemplate(t)
	for fn, param := range map[string]string{"GatewayFunction": "GatewayReservedConcurrency", "WorkerFunction": "WorkerReservedConcurrency", "WebSocketFunction": "WebSocketReservedConcurrency"} {
		v := get(tpl.resources()[fn], "Properties", "ReservedConcurrentExecutions")
		cond, yes, no, ok := ifCond(v)
		if !ok || !isRef(yes, param) || !isRef(no, "AWS::NoValue") {
			t.Errorf("%s: ReservedConcurrentExecutions = %v, want !If [<cond>, !Ref %s, !Ref AWS::NoValue]", fn, v, param)
			continue
		}
		want := map[string]any{"Fn::Not": []any{map[string]any{"Fn::Equals": []any{map[string]any{"Ref": param}, "0"}}}}
		if c := get(tpl, "Conditions", cond); !reflect.DeepEqual(c, want) {
			t.Errorf("%s = %v, want %s not 0 (0 reserves nothing; Lambda's own 0 would stop the function)", cond, c, param)
		}
		p := tpl.param(t, param)
		if p["Type"] != "Number" || p["Default"] != 0 || p["MinValue"] != 0 {
			t.Errorf("%s: Type %v, Default %v, MinValue %v, want Number, 0, 0 (a fresh account can reserve nothing)", param, p["Type"], p["Default"], p["MinValue"])
		}
	}
	for _, fn := range tpl.functions() {
		v := get(tpl.resources()[fn], "Properties", "ReservedConcurrentExecutions")
		if n, ok := asInt(v); ok {
			t.Errorf("%s: ReservedConcurrentExecutions = %d, a fixed reservation a fresh account cannot grant", fn, n)
		}
	}
}

// alarmWatch is what an alarm watches: its metric (or, for metric math,
// the metrics its expression reads), and the resource of its dimension.
type alarmWatch struct{ namespace, metric, target string }

// alarmMetrics lists what alarm p watches: its own metric, or those of
// its metric math (Metrics), with the expression that returns data.
func alarmMetrics(p map[string]any) (watches []alarmWatch, expr string) {
	target := func(dims any) string {
		l := asList(dims)
		if len(l) != 1 {
			return ""
		}
		v := get(l[0], "Value")
		if r, attr, ok := getAtt(v); ok && attr == "QueueName" {
			return r
		}
		s, _ := asMap(v)["Ref"].(string)
		return s
	}
	if p["MetricName"] != nil {
		return []alarmWatch{{asString(p["Namespace"]), asString(p["MetricName"]), target(p["Dimensions"])}}, ""
	}
	for _, m := range asList(p["Metrics"]) {
		if e, ok := asMap(m)["Expression"]; ok {
			if s, ok := sub(e); ok {
				expr = s
			} else {
				expr = asString(e)
			}
			continue
		}
		mm := get(m, "MetricStat", "Metric")
		watches = append(watches, alarmWatch{asString(get(mm, "Namespace")), asString(get(mm, "MetricName")), target(get(mm, "Dimensions"))})
	}
	return watches, expr
}

// TestAlarms: alarms an operator can act on, each threshold a documented
// parameter: any message in a dead-letter queue; the age of every other
// queue's oldest message; per function an error rate (errors over
// invocations with a minimum count, not any single error), any throttle,
// and its p99 duration as a share of its own timeout; and failed
// responses from the EMF metric pkg/telemetry writes. Every alarm
// notifies AlarmTopicArn when set and treats missing data as fine.
func TestAlarms(t *testing.T) {
	tpl := loadTemplate(t)
	found := map[string]map[string]any{} // kind + target -> properties
	wantActions := map[string]any{"Fn::If": []any{"HasAlarmTopic", []any{map[string]any{"Ref": "AlarmTopicArn"}}, map[string]any{"Ref": "AWS::NoValue"}}}
	for _, id := range tpl.ofType("AWS::CloudWatch::Alarm") {
		p := asMap(get(tpl.resources()[id], "Properties"))
		watches, expr := alarmMetrics(p)
		if len(watches) == 0 {
			t.Errorf("%s watches no metric", id)
			continue
		}
		if p["TreatMissingData"] != "notBreaching" {
			t.Errorf("%s: TreatMissingData = %v, want notBreaching (no data is no failure)", id, p["TreatMissingData"])
		}
		for _, a := range []string{"AlarmActions", "OKActions"} {
			if !reflect.DeepEqual(p[a], wantActions) {
				t.Errorf("%s: %s = %v, want %v", id, a, p[a], wantActions)
			}
		}
		if n, _ := asInt(p["EvaluationPeriods"]); n < 1 {
			t.Errorf("%s: EvaluationPeriods = %v", id, p["EvaluationPeriods"])
		}
		w := watches[0]
		var kind string
		switch {
		case w.metric == "ApproximateNumberOfMessagesVisible":
			kind = "dlq"
		case w.metric == "ApproximateAgeOfOldestMessage":
			kind = "age"
		case w.metric == "Throttles":
			kind = "throttles"
		case w.metric == "Errors" || w.metric == "Invocations":
			kind = "errors"
		case w.metric == "Duration":
			kind = "duration"
		case w.metric == telemetry.MetricOperationDuration:
			kind = "failed"
		default:
			t.Errorf("%s: watches %v, an alarm this test does not know", id, watches)
			continue
		}
		key := kind + " " + w.target
		if other, dup := found[key]; dup {
			t.Errorf("%s: a second %s alarm (%v)", id, key, other)
		}
		p["id"], p["expr"], p["watches"] = id, expr, watches
		found[key] = p
	}
	threshold := func(p map[string]any, param string) {
		t.Helper()
		if !isRef(p["Threshold"], param) {
			t.Errorf("%s: Threshold = %v, want !Ref %s", p["id"], p["Threshold"], param)
			return
		}
		if pp := tpl.param(t, param); pp["Type"] != "Number" {
			t.Errorf("%s: Type %v, want Number", param, pp["Type"])
		}
	}
	anyOccurrence := func(p map[string]any) {
		t.Helper()
		if n, ok := asInt(p["Threshold"]); !ok || n != 0 || p["ComparisonOperator"] != "GreaterThanThreshold" {
			t.Errorf("%s: %v %v, want GreaterThanThreshold 0 (any occurrence)", p["id"], p["ComparisonOperator"], p["Threshold"])
		}
	}
	need := func(key string) map[string]any {
		t.Helper()
		p := found[key]
		if p == nil {
			t.Errorf("no %s alarm", key)
		}
		return p
	}

	// Queues: the depth of each dead-letter queue, the age of the others.
	for _, q := range tpl.ofType("AWS::SQS::Queue") {
		if strings.HasSuffix(q, "DLQ") {
			if p := need("dlq " + q); p != nil {
				anyOccurrence(p)
			}
			continue
		}
		if p := need("age " + q); p != nil {
			if !strings.HasPrefix(asString(get(p, "Threshold", "Ref")), "Alarm") {
				t.Errorf("%s: Threshold = %v, want a parameter Alarm...", p["id"], p["Threshold"])
			}
			threshold(p, asString(get(p, "Threshold", "Ref")))
		}
	}

	// Functions: error rate, throttles, p99 duration against the timeout.
	for _, fn := range tpl.functions() {
		if p := need("throttles " + fn); p != nil {
			anyOccurrence(p)
		}
		if p := need("errors " + fn); p != nil {
			threshold(p, "AlarmErrorRatePercent")
			metrics := map[string]bool{}
			for _, w := range p["watches"].([]alarmWatch) {
				metrics[w.metric] = w.target == fn && w.namespace == "AWS/Lambda"
			}
			if !metrics["Errors"] || !metrics["Invocations"] {
				t.Errorf("%s: reads %v, want the Errors and Invocations of %s (a rate, not a count)", p["id"], p["watches"], fn)
			}
			expr := p["expr"].(string)
			for _, s := range []string{"100 * errors / invocations", "errors >= ${AlarmMinErrors}"} {
				if !strings.Contains(expr, s) {
					t.Errorf("%s: Expression %q lacks %q", p["id"], expr, s)
				}
			}
			if n, _ := asInt(p["DatapointsToAlarm"]); n < 2 {
				t.Errorf("%s: DatapointsToAlarm = %v, want at least 2 (one bad period is not an alarm)", p["id"], p["DatapointsToAlarm"])
			}
		}
		if p := need("duration " + fn); p != nil {
			threshold(p, "AlarmDurationPercentOfTimeout")
			timeout, _ := asInt(tpl.fnProp(fn, "Timeout"))
			if want := fmt.Sprintf("100 * p99 / %d", timeout*1000); p["expr"] != want {
				t.Errorf("%s: Expression %q, want %q (%s's Timeout is %d s)", p["id"], p["expr"], want, fn, timeout)
			}
			var stat any
			for _, m := range asList(p["Metrics"]) {
				if get(m, "MetricStat") != nil {
					stat = get(m, "MetricStat", "Stat")
				}
			}
			if stat != "p99" {
				t.Errorf("%s: Stat = %v, want p99", p["id"], stat)
			}
		}
	}

	// Failed responses: the metric and dimensions of pkg/telemetry's EMF
	// response line, in the configured namespace, when EMF is on.
	if p := need("failed "); p != nil { // two dimensions, no resource
		threshold(p, "AlarmFailedResponses")
		if !isRef(p["Namespace"], "MetricsNamespace") || p["Statistic"] != "SampleCount" {
			t.Errorf("%s: %v %v, want !Ref MetricsNamespace and SampleCount (one sample per response)", p["id"], p["Namespace"], p["Statistic"])
		}
		dims := map[string]any{}
		for _, d := range asList(p["Dimensions"]) {
			dims[asString(get(d, "Name"))] = get(d, "Value")
		}
		want := map[string]any{telemetry.DimOperation: "invoke_agent", telemetry.DimStatus: string(api.StatusFailed)}
		if !reflect.DeepEqual(dims, want) {
			t.Errorf("%s: Dimensions %v, want %v (a dimension set of the EMF response line)", p["id"], dims, want)
		}
		res := tpl.resources()[p["id"].(string)]
		if c := get(res, "Condition"); c != "HasEmfMetrics" {
			t.Errorf("%s: Condition = %v, want HasEmfMetrics", p["id"], c)
		}
	}
	if c := get(tpl, "Conditions", "HasEmfMetrics"); !reflect.DeepEqual(c, map[string]any{"Fn::Equals": []any{map[string]any{"Ref": "Metrics"}, "emf"}}) {
		t.Errorf("HasEmfMetrics = %v, want Metrics equals emf", c)
	}

	p := tpl.param(t, "AlarmTopicArn")
	if p["Default"] != "" {
		t.Errorf("AlarmTopicArn Default = %v, want empty (no topic)", p["Default"])
	}
	re, err := regexp.Compile(asString(p["AllowedPattern"]))
	if err != nil {
		t.Fatalf("AlarmTopicArn AllowedPattern: %v", err)
	}
	for v, ok := range map[string]bool{"": true, "arn:aws:sns:eu-west-1:123456789012:lambent-alarms": true,
		"arn:aws-us-gov:sns:us-gov-west-1:123456789012:ops": true, "lambent-alarms": false, "arn:aws:sqs:eu-west-1:123456789012:q": false} {
		if re.MatchString(v) != ok {
			t.Errorf("AlarmTopicArn AllowedPattern matches %q: %v, want %v", v, !ok, ok)
		}
	}
	if c := get(tpl, "Conditions", "HasAlarmTopic"); !reflect.DeepEqual(c, map[string]any{"Fn::Not": []any{map[string]any{"Fn::Equals": []any{map[string]any{"Ref": "AlarmTopicArn"}, ""}}}}) {
		t.Errorf("HasAlarmTopic = %v, want AlarmTopicArn not empty", c)
	}
}

// ---------------------------------------------------- IAM against code

// grantUse says where the deployed code uses an IAM action on a kind of
// resource, and when.
type grantUse struct {
	// env (and value, when not empty) is the environment under which the
	// function runs that code.
	env, value string
	// dir and code: a non-test Go file under dir (of the module) matches
	// code where the API is called (its input struct, which paginators
	// and waiters take too).
	dir, code string
	// poller marks a grant the event source mapping polling the resource
	// for the function uses.
	poller bool
	// optional marks a use that needs the grant only in some
	// configurations (kms:Decrypt: only with a customer-managed key).
	optional bool
}

// grantUses lists, by "<resource kind> <action>", every grant the
// functions may hold and what uses it. DynamoDB table management
// (CreateTable, DescribeTable, ...: pkg/store/dynamodb/table.go) runs only
// with LAMBENT_CREATE_TABLE, which the template never sets, so table.go is
// not scanned.
var grantUses = map[string]grantUse{
	"ResponsesTable dynamodb:GetItem":            {env: "LAMBENT_STORE", value: "dynamodb", dir: "pkg/store/dynamodb", code: `GetItemInput\{`},
	"ResponsesTable dynamodb:PutItem":            {env: "LAMBENT_STORE", value: "dynamodb", dir: "pkg/store/dynamodb", code: `PutItemInput\{|types\.Put\{`},
	"ResponsesTable dynamodb:UpdateItem":         {env: "LAMBENT_STORE", value: "dynamodb", dir: "pkg/store/dynamodb", code: `UpdateItemInput\{|types\.Update\{`},
	"ResponsesTable dynamodb:DeleteItem":         {env: "LAMBENT_STORE", value: "dynamodb", dir: "pkg/store/dynamodb", code: `DeleteItemInput\{|types\.Delete\{`},
	"ResponsesTable dynamodb:ConditionCheckItem": {env: "LAMBENT_STORE", value: "dynamodb", dir: "pkg/store/dynamodb", code: `types\.ConditionCheck\{`},
	"ResponsesTable dynamodb:BatchGetItem":       {env: "LAMBENT_STORE", value: "dynamodb", dir: "pkg/store/dynamodb", code: `BatchGetItemInput\{`},
	"ResponsesTable dynamodb:BatchWriteItem":     {env: "LAMBENT_STORE", value: "dynamodb", dir: "pkg/store/dynamodb", code: `BatchWriteItemInput\{`},
	"ResponsesTable dynamodb:Query":              {env: "LAMBENT_STORE", value: "dynamodb", dir: "pkg/store/dynamodb", code: `QueryInput\{`},
	"ResponsesTable dynamodb:Scan":               {env: "LAMBENT_STORE", value: "dynamodb", dir: "pkg/store/dynamodb", code: `ScanInput\{`},
	"ResponsesTable dynamodb:DescribeTable":      {env: "LAMBENT_STORE", value: "dynamodb", dir: "pkg/store/dynamodb", code: `DescribeTableInput\{`},
	"ResponsesTable dynamodb:DescribeTimeToLive": {env: "LAMBENT_STORE", value: "dynamodb", dir: "pkg/store/dynamodb", code: `DescribeTimeToLiveInput\{`},
	"tool-function lambda:InvokeFunction":        {env: "LAMBENT_TOOLS", dir: "pkg", code: `awsjson\.InvokeInput\{`},
	"ResponsesQueue sqs:SendMessage":             {env: "LAMBENT_QUEUE_URL", dir: "pkg", code: `SendMessageInput\{`},
	"ResponsesQueue sqs:ReceiveMessage":          {poller: true},
	"ResponsesQueue sqs:DeleteMessage":           {poller: true},
	"ResponsesQueue sqs:GetQueueAttributes":      {poller: true},
	"LambentBus events:PutEvents":                {env: "LAMBENT_EVENT_BUS", dir: "pkg", code: `PutEventsInput\{`},
	"hook-bus events:PutEvents":                  {env: "LAMBENT_HOOKS", dir: "pkg/hooks", code: `eventbus\.Put\(`},
	"hook-function lambda:InvokeFunction":        {env: "LAMBENT_HOOKS", dir: "pkg/hooks", code: `awsjson\.InvokeInput\{`},
	"ssm-parameter ssm:GetParameter":             {env: "LAMBENT_PROVIDER_API_KEY_SSM", dir: "pkg/awsjson", code: `\.call\(ctx, "GetParameter"`},
	"api-keys-parameter ssm:GetParameter":        {env: "LAMBENT_API_KEYS_SSM", dir: "pkg/awsjson", code: `\.call\(ctx, "GetParameter"`},
	"compaction-keys-parameter ssm:GetParameter": {env: "LAMBENT_COMPACTION_KEYS_SSM", dir: "pkg/awsjson", code: `\.call\(ctx, "GetParameter"`},
	"secret-key-parameter ssm:GetParameter":      {env: "LAMBENT_SECRET_KEY_SSM", dir: "pkg/awsjson", code: `\.call\(ctx, "GetParameter"`},
	"kms-key kms:Decrypt":                        {env: "LAMBENT_PROVIDER_API_KEY_SSM", dir: "pkg/awsjson", code: `WithDecryption: true`, optional: true},
	// Bedrock is called when LAMBENT_PROVIDER (a parameter) or a route names
	// it; the grant itself only exists with BedrockModelArns.
	"bedrock-model bedrock:InvokeModel":                   {env: "LAMBENT_PROVIDER", dir: "pkg/provider/bedrock", code: `\.Converse\(ctx`},
	"bedrock-model bedrock:InvokeModelWithResponseStream": {env: "LAMBENT_PROVIDER", dir: "pkg/provider/bedrock", code: `\.ConverseStream\(ctx`},
	// CountTokens serves POST /v1/responses/input_tokens, which only the
	// gateway's HTTP front doors route: the worker and the WebSocket
	// function run the code but never that route.
	"bedrock-model bedrock:CountTokens":        {env: "LAMBENT_PROVIDER", dir: "pkg/provider/bedrock", code: `\.CountTokens\(ctx`, optional: true},
	"bedrock-guardrail bedrock:ApplyGuardrail": {env: "LAMBENT_BEDROCK_GUARDRAIL_ID", dir: "pkg/provider/bedrock", code: `GuardrailIdentifier:`},
	// WebSocket mode: the connections (pkg/wsapi/apigw) and their latest
	// responses (through pkg/store/dynamodb), the queue of turns, and the
	// Management API.
	"WebSocketConnectionsTable dynamodb:GetItem":          {env: "LAMBENT_WEBSOCKET_TABLE", dir: "pkg/wsapi/apigw", code: `GetItemInput\{`},
	"WebSocketConnectionsTable dynamodb:PutItem":          {env: "LAMBENT_WEBSOCKET_TABLE", dir: "pkg/wsapi/apigw", code: `PutItemInput\{`},
	"WebSocketConnectionsTable dynamodb:DeleteItem":       {env: "LAMBENT_WEBSOCKET_TABLE", dir: "pkg/wsapi/apigw", code: `DeleteItemInput\{`},
	"WebSocketConnectionsTable dynamodb:BatchGetItem":     {env: "LAMBENT_WEBSOCKET_TABLE", dir: "pkg/store/dynamodb", code: `BatchGetItemInput\{`},
	"WebSocketConnectionsTable dynamodb:BatchWriteItem":   {env: "LAMBENT_WEBSOCKET_TABLE", dir: "pkg/store/dynamodb", code: `BatchWriteItemInput\{`},
	"WebSocketConnectionsTable dynamodb:Query":            {env: "LAMBENT_WEBSOCKET_TABLE", dir: "pkg/store/dynamodb", code: `QueryInput\{`},
	"WebSocketQueue sqs:SendMessage":                      {env: "LAMBENT_WEBSOCKET_QUEUE_URL", dir: "pkg/wsapi", code: `SendMessageInput\{`},
	"WebSocketQueue sqs:ReceiveMessage":                   {poller: true},
	"WebSocketQueue sqs:DeleteMessage":                    {poller: true},
	"WebSocketQueue sqs:GetQueueAttributes":               {poller: true},
	"websocket-connections execute-api:ManageConnections": {env: "LAMBENT_WEBSOCKET_QUEUE_URL", dir: "pkg/wsapi", code: `PostToConnectionInput\{|DeleteConnectionInput\{`},
}

// notScanned are the files whose API calls never run in a deployed
// function (see grantUses).
var notScanned = []string{"pkg/store/dynamodb/table.go"}

// codeUses reports whether non-test Go code under dir matches code.
func codeUses(t *testing.T, dir, code string) bool {
	t.Helper()
	re := regexp.MustCompile(code)
	found := false
	err := filepath.WalkDir(filepath.Join(root, dir), func(p string, d fs.DirEntry, err error) error {
		if err != nil || found {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") || slices.Contains(notScanned, filepath.ToSlash(rel)) {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		found = re.Match(b)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return found
}

// TestIAMGrantsMatchTheCode audits each function's policy against the code
// it runs: every granted action is one the function's code calls in its
// deployed configuration (or its event source mapping uses), and every
// such call is granted.
func TestIAMGrantsMatchTheCode(t *testing.T) {
	tpl := loadTemplate(t)
	for _, id := range tpl.functions() {
		if tpl.env(id)["LAMBENT_CREATE_TABLE"] != nil {
			t.Errorf("%s sets LAMBENT_CREATE_TABLE: table management is not granted (and the table belongs to the template)", id)
		}
	}
	kindOf := func(r any) string {
		k := classify(r)
		if strings.HasSuffix(k, "ToolFunction") {
			return "tool-function"
		}
		return k
	}
	polls := func(fn, res string) bool {
		for _, id := range tpl.ofType("AWS::Lambda::EventSourceMapping") {
			p := asMap(get(tpl.resources()[id], "Properties"))
			if r, _, _ := getAtt(p["EventSourceArn"]); r == res && isRef(p["FunctionName"], fn) {
				return true
			}
		}
		return false
	}
	used := func(fn, key string) bool {
		u := grantUses[key]
		if u.poller {
			kind, _, _ := strings.Cut(key, " ")
			return polls(fn, kind)
		}
		v, set := tpl.env(fn)[u.env]
		if !set || (u.value != "" && v != u.value) {
			return false
		}
		return codeUses(t, u.dir, u.code)
	}
	for _, fn := range tpl.functions() {
		granted := map[string]bool{}
		for _, p := range asList(get(tpl.resources()[fn], "Properties", "Policies")) {
			for _, st := range statements(get(p, "Statement")) {
				resources := asList(st["Resource"])
				if resources == nil {
					resources = []any{st["Resource"]}
				}
				for _, r := range resources {
					for _, a := range asStrings(st["Action"]) {
						granted[kindOf(r)+" "+a] = true
					}
				}
			}
		}
		for key := range granted {
			if _, known := grantUses[key]; !known {
				t.Errorf("%s is granted %s, which no code of Lambent uses (or add it to grantUses with its use)", fn, key)
			} else if u := grantUses[key]; !used(fn, key) {
				t.Errorf("%s is granted %s, which the code it runs never uses in its configuration (environment %s=%s, code under %s matching %s): "+
					"remove the grant (or, if the call moved, update grantUses)", fn, key, u.env, u.value, u.dir, u.code)
			}
		}
		for key, u := range grantUses {
			if !u.optional && !granted[key] && used(fn, key) {
				t.Errorf("%s runs code that needs %s, which its policy does not grant", fn, key)
			}
		}
	}
}

// ---------------------------------------------------------- docs

// TestParametersDocumented: the deployment page (docs/aws.md) names every
// template parameter.
func TestParametersDocumented(t *testing.T) {
	tpl := loadTemplate(t)
	b, err := os.ReadFile(filepath.Join(root, "docs", "aws.md"))
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	for name := range asMap(tpl["Parameters"]) {
		if !strings.Contains(page, "`"+name+"`") {
			t.Errorf("docs/aws.md does not document the template parameter `%s`", name)
		}
	}
}
