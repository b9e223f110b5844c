package deploy

// Operating the stack on AWS (issue 25): every failure reaches a queue or
// an alarm, every front door has a cost ceiling, every function is
// observed alike.

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/lambent/lambent/pkg/app"
	"github.com/lambent/lambent/pkg/wsapi/apigw"
)

// TestWebSocketStageThrottlingAndAccessLogs: like the REST stage, the
// WebSocket stage throttles every route with parameters and writes JSON
// access logs to a log group of its own with the stack's retention.
func TestWebSocketStageThrottlingAndAccessLogs(t *testing.T) {
	tpl := loadTemplate(t)
	stage := asMap(get(tpl.resource(t, "WebSocketStage", "AWS::ApiGatewayV2::Stage"), "Properties"))
	rs := asMap(stage["DefaultRouteSettings"])
	for prop, param := range map[string]string{"ThrottlingRateLimit": "WebSocketThrottleRateLimit", "ThrottlingBurstLimit": "WebSocketThrottleBurstLimit"} {
		if !isRef(rs[prop], param) {
			t.Errorf("DefaultRouteSettings %s = %v, want !Ref %s", prop, rs[prop], param)
		}
		p := tpl.param(t, param)
		if min, ok := asInt(p["MinValue"]); !ok || min < 1 {
			t.Errorf("%s MinValue = %v, want at least 1 (0 refuses every message)", param, p["MinValue"])
		}
		if def, ok := asInt(p["Default"]); !ok || def < 1 {
			t.Errorf("%s Default = %v, want a positive number", param, p["Default"])
		}
	}
	cond, yes, no, ok := ifCond(stage["AccessLogSettings"])
	if !ok || cond != "HasWebSocketAccessLogs" || !isRef(no, "AWS::NoValue") {
		t.Fatalf("AccessLogSettings = %v, want !If [HasWebSocketAccessLogs, {...}, !Ref AWS::NoValue]", stage["AccessLogSettings"])
	}
	if c := get(tpl, "Conditions", cond); !reflect.DeepEqual(c, map[string]any{"Fn::Equals": []any{map[string]any{"Ref": "WebSocketAccessLogs"}, "Enabled"}}) {
		t.Errorf("%s = %v, want WebSocketAccessLogs equals Enabled", cond, c)
	}
	group, attr, _ := getAtt(get(yes, "DestinationArn"))
	if attr != "Arn" {
		t.Fatalf("access log DestinationArn = %v, want !GetAtt <log group>.Arn", get(yes, "DestinationArn"))
	}
	lg := tpl.resource(t, group, "AWS::Logs::LogGroup")
	if lg["Condition"] != cond {
		t.Errorf("%s: Condition = %v, want %s", group, lg["Condition"], cond)
	}
	if got := get(lg, "Properties", "RetentionInDays"); !isRef(got, "LogRetentionInDays") {
		t.Errorf("%s: RetentionInDays = %v, want !Ref LogRetentionInDays", group, got)
	}
	var fields map[string]string
	if err := json.Unmarshal([]byte(asString(get(yes, "Format"))), &fields); err != nil {
		t.Fatalf("access log Format is not one JSON object of strings: %v", err)
	}
	contextVar := regexp.MustCompile(`^\$context\.[A-Za-z.]+$`)
	var vars []string
	for k, v := range fields {
		if !contextVar.MatchString(v) {
			t.Errorf("access log field %s = %q, want a $context variable", k, v)
		}
		vars = append(vars, v)
	}
	for _, v := range []string{"$context.requestId", "$context.connectionId", "$context.routeKey", "$context.eventType",
		"$context.status", "$context.identity.sourceIp", "$context.integration.error", "$context.error.responseType"} {
		if !slices.Contains(vars, v) {
			t.Errorf("access log Format lacks %s", v)
		}
	}
}

// TestQueueTriggersAreCapped: every SQS event source caps the concurrency
// it starts with a parameter within the event source's 2..1000.
func TestQueueTriggersAreCapped(t *testing.T) {
	tpl := loadTemplate(t)
	want := map[string]string{"ResponsesQueue": "WorkerQueueMaxConcurrency", "WebSocketQueue": "WebSocketQueueMaxConcurrency"}
	seen := 0
	for _, id := range tpl.ofType("AWS::Lambda::EventSourceMapping") {
		p := asMap(get(tpl.resources()[id], "Properties"))
		q, _, _ := getAtt(p["EventSourceArn"])
		param, ok := want[q]
		if !ok {
			t.Errorf("%s: an event source on %v this test does not know", id, q)
			continue
		}
		seen++
		if got := get(p, "ScalingConfig", "MaximumConcurrency"); !isRef(got, param) {
			t.Errorf("%s: ScalingConfig.MaximumConcurrency = %v, want !Ref %s", id, got, param)
		}
		mc := tpl.param(t, param)
		lo, _ := asInt(mc["MinValue"])
		hi, _ := asInt(mc["MaxValue"])
		def, _ := asInt(mc["Default"])
		if lo < 2 || hi > 1000 || hi == 0 || def < lo || def > hi {
			t.Errorf("%s: MinValue %v, MaxValue %v, Default %v, want a default within 2..1000 (the SQS event source's range)", param, mc["MinValue"], mc["MaxValue"], mc["Default"])
		}
	}
	if seen != len(want) {
		t.Errorf("%d capped event sources, want %d (%v)", seen, len(want), want)
	}
}

// TestWebSocketQueueHoldsTheLargestTurn: a queued turn is the client's
// message (at most apigw.MaxMessage, API Gateway's 128 KB) as a JSON
// string, which can grow it up to 6 times (every byte a \u00XX escape),
// plus the turn's other fields. SQS's default limit, 256 KiB, refused such
// turns; its largest, 1 MiB, holds them.
func TestWebSocketQueueHoldsTheLargestTurn(t *testing.T) {
	tpl := loadTemplate(t)
	p := asMap(get(tpl.resources()["WebSocketQueue"], "Properties"))
	got, ok := asInt(p["MaximumMessageSize"])
	if want := 6*apigw.MaxMessage + 4<<10; !ok || got < want || got > 1<<20 {
		t.Errorf("WebSocketQueue MaximumMessageSize = %v, want at least %d (6 x the largest message and the turn's fields) and at most 1 MiB (SQS's largest)", p["MaximumMessageSize"], want)
	}
}

// TestAsyncTargetsHaveDeadLettersAndRetries: every EventBridge rule target
// retries within a bounded age and then sends what it could not deliver to
// a dead-letter queue that has an alarm and a queue policy letting
// EventBridge (and only rules of the stack's bus) send to it; every
// function invoked asynchronously has an on-failure destination.
func TestAsyncTargetsHaveDeadLettersAndRetries(t *testing.T) {
	tpl := loadTemplate(t)
	rules := 0
	for _, fn := range tpl.functions() {
		for name, ev := range asMap(get(tpl.resources()[fn], "Properties", "Events")) {
			if get(ev, "Type") != "EventBridgeRule" {
				continue
			}
			rules++
			p := asMap(get(ev, "Properties"))
			age, _ := asInt(get(p, "RetryPolicy", "MaximumEventAgeInSeconds"))
			attempts, _ := asInt(get(p, "RetryPolicy", "MaximumRetryAttempts"))
			if age < 60 || age > 86400 || attempts < 1 || attempts > 185 {
				t.Errorf("%s event %s: RetryPolicy %v, want MaximumEventAgeInSeconds 60..86400 and MaximumRetryAttempts 1..185", fn, name, p["RetryPolicy"])
			}
			dlq, attr, ok := getAtt(get(p, "DeadLetterConfig", "Arn"))
			if !ok || attr != "Arn" {
				t.Errorf("%s event %s: DeadLetterConfig = %v, want Arn: !GetAtt <queue>.Arn", fn, name, p["DeadLetterConfig"])
				continue
			}
			tpl.resource(t, dlq, "AWS::SQS::Queue")
			var granted bool
			for _, id := range tpl.ofType("AWS::SQS::QueuePolicy") {
				qp := asMap(get(tpl.resources()[id], "Properties"))
				if !slices.ContainsFunc(asList(qp["Queues"]), func(q any) bool { return isRef(q, dlq) }) {
					continue
				}
				for _, st := range statements(get(qp["PolicyDocument"], "Statement")) {
					if get(st, "Principal", "Service") != "events.amazonaws.com" || get(st, "Action") != "sqs:SendMessage" {
						continue
					}
					src, _ := sub(get(st, "Condition", "ArnLike", "aws:SourceArn"))
					if !strings.Contains(src, ":rule/${"+asString(get(p, "EventBusName", "Ref"))+"}/") {
						t.Errorf("%s: EventBridge may send from %q, want only the rules of the stack's bus", id, src)
					}
					granted = true
				}
			}
			if !granted {
				t.Errorf("%s event %s: no queue policy lets events.amazonaws.com send to %s", fn, name, dlq)
			}
		}
		if len(asMap(get(tpl.resources()[fn], "Properties", "Events"))) > 0 {
			dest := get(tpl.resources()[fn], "Properties", "EventInvokeConfig", "DestinationConfig", "OnFailure")
			if get(dest, "Type") != "SQS" || get(dest, "Destination") == nil {
				t.Errorf("%s: asynchronously invoked without an OnFailure destination (%v)", fn, dest)
			}
		}
	}
	if rules == 0 {
		t.Error("no EventBridgeRule event")
	}
}

// TestExplicitDeletionPolicies: every log group, queue and table says what
// a stack deletion or replacement does to it (cfn-lint I3011), the same
// for both; dead-letter queues and the responses table are kept.
func TestExplicitDeletionPolicies(t *testing.T) {
	tpl := loadTemplate(t)
	for _, typ := range []string{"AWS::Logs::LogGroup", "AWS::SQS::Queue", "AWS::DynamoDB::Table"} {
		for _, id := range tpl.ofType(typ) {
			r := tpl.resources()[id]
			del, repl := get(r, "DeletionPolicy"), get(r, "UpdateReplacePolicy")
			if del == nil || del != repl {
				t.Errorf("%s: DeletionPolicy %v, UpdateReplacePolicy %v, want both set and equal", id, del, repl)
			}
			if (strings.HasSuffix(id, "DLQ") || id == "ResponsesTable") && del != "Retain" {
				t.Errorf("%s: DeletionPolicy %v, want Retain (what failed, and the responses, outlive the stack)", id, del)
			}
		}
	}
}

// TestTelemetryAlike: every function that runs the engine (the gateway,
// the worker, the WebSocket function) gets the same metrics, hooks and
// tracing settings, and the grants the hooks need; X-Ray tracing is a
// parameter of every function and of the REST stage.
func TestTelemetryAlike(t *testing.T) {
	tpl := loadTemplate(t)
	engines := []string{"GatewayFunction", "WorkerFunction", "WebSocketFunction"}
	for _, name := range []string{"LAMBENT_METRICS", "LAMBENT_METRICS_NAMESPACE", "LAMBENT_HOOKS", "LAMBENT_OTLP_ENDPOINT"} {
		want := tpl.env(engines[0])[name]
		if want == nil {
			t.Errorf("%s: no %s", engines[0], name)
		}
		for _, fn := range engines[1:] {
			if got := tpl.env(fn)[name]; !reflect.DeepEqual(got, want) {
				t.Errorf("%s: %s = %v, want %v as %s", fn, name, got, want, engines[0])
			}
		}
	}
	for _, fn := range engines {
		sids := map[string]bool{}
		for _, pol := range asList(tpl.fnProp(fn, "Policies")) {
			for _, st := range statements(get(pol, "Statement")) {
				sids[asString(st["Sid"])] = true
			}
		}
		for _, sid := range []string{"ToolHookEventBus", "ToolHookFunction"} {
			if !sids[sid] {
				t.Errorf("%s: no %s statement (LAMBENT_HOOKS names it)", fn, sid)
			}
		}
	}
	if g := get(tpl, "Globals", "Function", "Tracing"); !isRef(g, "XRayTracing") {
		t.Errorf("Globals.Function.Tracing = %v, want !Ref XRayTracing", g)
	}
	for _, fn := range tpl.functions() {
		if v := get(tpl.resources()[fn], "Properties", "Tracing"); v != nil {
			t.Errorf("%s: Tracing = %v overrides the global parameter", fn, v)
		}
	}
	if p := tpl.param(t, "XRayTracing"); p["Default"] != "PassThrough" || !reflect.DeepEqual(p["AllowedValues"], []any{"Active", "PassThrough"}) {
		t.Errorf("XRayTracing: Default %v, AllowedValues %v, want PassThrough of [Active PassThrough]", p["Default"], p["AllowedValues"])
	}
	cond, yes, no, ok := ifCond(get(tpl.resource(t, "RestApiStage", "AWS::ApiGateway::Stage"), "Properties", "TracingEnabled"))
	if !ok || cond != "IsXRayActive" || yes != true || no != false {
		t.Errorf("RestApiStage TracingEnabled: want !If [IsXRayActive, true, false]")
	}
}

// TestSampleEventsMatchTheStages: the sample events of events/ name the
// stages the template deploys by default, so that `sam local invoke` and
// `make invoke` see what API Gateway sends.
func TestSampleEventsMatchTheStages(t *testing.T) {
	tpl := loadTemplate(t)
	stages := map[string]string{
		"websocket-":    asString(tpl.param(t, "WebSocketStageName")["Default"]),
		"gateway-rest-": asString(tpl.param(t, "RestApiStageName")["Default"]),
	}
	files, err := filepath.Glob(filepath.Join(root, "events", "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("events/*.json: %v", err)
	}
	checked := 0
	for _, f := range files {
		base := filepath.Base(f)
		var stage string
		for prefix, s := range stages {
			if strings.HasPrefix(base, prefix) {
				stage = s
			}
		}
		if stage == "" {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var ev struct {
			RequestContext struct {
				Stage string `json:"stage"`
			} `json:"requestContext"`
			Records []struct {
				Body string `json:"body"`
			} `json:"Records"`
		}
		if err := json.Unmarshal(b, &ev); err != nil {
			t.Fatalf("%s: %v", base, err)
		}
		checked++
		if ev.RequestContext.Stage != "" && ev.RequestContext.Stage != stage {
			t.Errorf("%s: stage %q, want the template's %q", base, ev.RequestContext.Stage, stage)
		}
		for _, r := range ev.Records { // a queued WebSocket turn names its endpoint
			var turn struct {
				Endpoint string `json:"endpoint"`
			}
			_ = json.Unmarshal([]byte(r.Body), &turn)
			if turn.Endpoint != "" && !strings.HasSuffix(turn.Endpoint, "/"+stage) {
				t.Errorf("%s: endpoint %q, want one of stage %q", base, turn.Endpoint, stage)
			}
		}
	}
	if checked < 4 {
		t.Errorf("checked %d sample events, want the WebSocket and REST ones", checked)
	}
}

// TestLocalInvokeEnv: env.json, the --env-vars file of `sam local invoke`,
// names functions of the template and only variables each declares (SAM
// ignores any other), and its settings are valid configurations (memory
// store, no SSM, no AWS queue or bus: nothing of a deployment needed).
func TestLocalInvokeEnv(t *testing.T) {
	tpl := loadTemplate(t)
	b, err := os.ReadFile(filepath.Join(root, "env.json"))
	if err != nil {
		t.Fatal(err)
	}
	var env map[string]map[string]string
	if err := json.Unmarshal(b, &env); err != nil {
		t.Fatalf("env.json: %v", err)
	}
	for _, fn := range tpl.functions() {
		if _, ok := env[fn]; !ok {
			t.Errorf("env.json has no entry for %s", fn)
		}
	}
	for fn, vars := range env {
		if !slices.Contains(tpl.functions(), fn) {
			t.Errorf("env.json: %s is not a function of the template", fn)
			continue
		}
		declared := tpl.env(fn)
		for k := range vars {
			if _, ok := declared[k]; !ok {
				t.Errorf("env.json: %s sets %s, which the template does not declare for it (sam local ignores it)", fn, k)
			}
		}
		if vars["LAMBENT_STORE"] != "" && vars["LAMBENT_STORE"] != "memory" {
			t.Errorf("env.json: %s LAMBENT_STORE = %q, want memory (no table locally)", fn, vars["LAMBENT_STORE"])
		}
		for _, k := range []string{"LAMBENT_PROVIDER_API_KEY_SSM", "LAMBENT_API_KEYS_SSM", "LAMBENT_COMPACTION_KEYS_SSM", "LAMBENT_SECRET_KEY_SSM", "LAMBENT_QUEUE_URL", "LAMBENT_EVENT_BUS"} {
			if _, ok := declared[k]; ok && vars[k] != "" {
				t.Errorf("env.json: %s %s = %q, want empty (a deployment's resource)", fn, k, vars[k])
			} else if ok && !hasKey(vars, k) {
				t.Errorf("env.json: %s leaves %s to the template (a deployment's resource), want it empty", fn, k)
			}
		}
		if _, err := app.FromEnv(func(k string) string { return vars[k] }); err != nil {
			t.Errorf("env.json: %s: %v", fn, err)
		}
	}
}

func hasKey(m map[string]string, k string) bool { _, ok := m[k]; return ok }
