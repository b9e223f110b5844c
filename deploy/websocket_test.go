package deploy

import (
	"reflect"
	"slices"
	"strings"
	"testing"
)

// TestWebSocketAPI: the WebSocket API's three routes reach WebSocketFunction
// through one Lambda proxy integration within API Gateway's 29 s; $connect
// carries the auth parameter; the stage deploys itself; API Gateway may
// invoke the function from this API only.
func TestWebSocketAPI(t *testing.T) {
	tpl := loadTemplate(t)
	apis := tpl.ofType("AWS::ApiGatewayV2::Api")
	if !reflect.DeepEqual(apis, []string{"WebSocketApi"}) {
		t.Fatalf("ApiGatewayV2 APIs %v, want [WebSocketApi]", apis)
	}
	if p := get(tpl.resources()["WebSocketApi"], "Properties", "ProtocolType"); p != "WEBSOCKET" {
		t.Errorf("WebSocketApi ProtocolType = %v, want WEBSOCKET", p)
	}
	integrations := tpl.ofType("AWS::ApiGatewayV2::Integration")
	if len(integrations) != 1 {
		t.Fatalf("integrations %v, want one", integrations)
	}
	in := asMap(get(tpl.resources()[integrations[0]], "Properties"))
	if in["IntegrationType"] != "AWS_PROXY" || !isRef(in["ApiId"], "WebSocketApi") {
		t.Errorf("%s: %v on %v, want AWS_PROXY on WebSocketApi", integrations[0], in["IntegrationType"], in["ApiId"])
	}
	if uri, _ := sub(in["IntegrationUri"]); !strings.Contains(uri, "${WebSocketFunction.Arn}/invocations") {
		t.Errorf("%s: IntegrationUri = %v, want WebSocketFunction's invocations", integrations[0], in["IntegrationUri"])
	}
	if ms, _ := asInt(in["TimeoutInMillis"]); ms < 1 || ms > 29000 {
		t.Errorf("%s: TimeoutInMillis = %v, want at most API Gateway's 29000", integrations[0], in["TimeoutInMillis"])
	}
	routes := map[string]map[string]any{}
	for _, id := range tpl.ofType("AWS::ApiGatewayV2::Route") {
		p := asMap(get(tpl.resources()[id], "Properties"))
		routes[asString(p["RouteKey"])] = p
		if s, _ := sub(p["Target"]); s != "integrations/${"+integrations[0]+"}" {
			t.Errorf("%s: Target = %v, want the Lambda integration", id, p["Target"])
		}
	}
	var keys []string
	for k := range routes {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	if !reflect.DeepEqual(keys, []string{"$connect", "$default", "$disconnect"}) {
		t.Errorf("routes %v, want $connect, $default, $disconnect", keys)
	}
	if a := routes["$connect"]["AuthorizationType"]; !isRef(a, "WebSocketAuthType") {
		t.Errorf("$connect AuthorizationType = %v, want !Ref WebSocketAuthType", a)
	}
	if p := tpl.param(t, "WebSocketAuthType"); p["Default"] != "AWS_IAM" || !reflect.DeepEqual(p["AllowedValues"], []any{"AWS_IAM", "NONE"}) {
		t.Errorf("WebSocketAuthType: Default %v, AllowedValues %v, want AWS_IAM of [AWS_IAM NONE]", p["Default"], p["AllowedValues"])
	}
	stage := asMap(get(tpl.resource(t, "WebSocketStage", "AWS::ApiGatewayV2::Stage"), "Properties"))
	if stage["AutoDeploy"] != true || !isRef(stage["StageName"], "WebSocketStageName") {
		t.Errorf("WebSocketStage: AutoDeploy %v, StageName %v, want true and !Ref WebSocketStageName", stage["AutoDeploy"], stage["StageName"])
	}
	var permitted bool
	for _, id := range tpl.ofType("AWS::Lambda::Permission") {
		p := asMap(get(tpl.resources()[id], "Properties"))
		src, _ := sub(p["SourceArn"])
		if !strings.Contains(src, "${WebSocketApi}/") {
			continue
		}
		permitted = true
		if r, a, _ := getAtt(p["FunctionName"]); r != "WebSocketFunction" || a != "Arn" || p["Principal"] != "apigateway.amazonaws.com" || p["Action"] != "lambda:InvokeFunction" {
			t.Errorf("%s: %v for %v by %v, want lambda:InvokeFunction of WebSocketFunction by API Gateway", id, p["Action"], p["FunctionName"], p["Principal"])
		}
	}
	if !permitted {
		t.Error("no AWS::Lambda::Permission lets the WebSocket API invoke WebSocketFunction")
	}
	if s, _ := sub(get(tpl, "Outputs", "WebSocketUrl", "Value")); !strings.HasPrefix(s, "wss://${WebSocketApi}.execute-api.${AWS::Region}.") || !strings.HasSuffix(s, "/${WebSocketStageName}") {
		t.Errorf("WebSocketUrl = %v, want wss://${WebSocketApi}.execute-api.${AWS::Region}.<suffix>/${WebSocketStageName}", s)
	}
}

// TestWebSocketTurnsQueue: the turns queue is FIFO (one message group per
// lane of a connection: in order, one at a time), outlasts the function's runs, and
// feeds WebSocketFunction one message at a time with partial failures.
func TestWebSocketTurnsQueue(t *testing.T) {
	tpl := loadTemplate(t)
	timeout, _ := asInt(tpl.fnProp("WebSocketFunction", "Timeout"))
	if timeout != 900 {
		t.Errorf("WebSocketFunction Timeout = %d, want 900 (turns run up to the Lambda maximum)", timeout)
	}
	q := asMap(get(tpl.resource(t, "WebSocketQueue", "AWS::SQS::Queue"), "Properties"))
	dlq := asMap(get(tpl.resource(t, "WebSocketDLQ", "AWS::SQS::Queue"), "Properties"))
	if q["FifoQueue"] != true || dlq["FifoQueue"] != true {
		t.Errorf("FifoQueue: queue %v, dead-letter queue %v, want both true", q["FifoQueue"], dlq["FifoQueue"])
	}
	// A failing turn reaches the dead-letter queue, and a crashed turn
	// frees its connection's message group, within the connection's 60
	// minutes (TestQueuesReachTheirDeadLetterQueue checks the rest).
	vis, _ := asInt(q["VisibilityTimeout"])
	receives, _ := asInt(get(q, "RedrivePolicy", "maxReceiveCount"))
	if vis*receives >= 3600 {
		t.Errorf("WebSocketQueue: VisibilityTimeout %d s x maxReceiveCount %d = %d s, want under the 60-minute connection", vis, receives, vis*receives)
	}
	if r, _, _ := getAtt(get(q, "RedrivePolicy", "deadLetterTargetArn")); r != "WebSocketDLQ" {
		t.Errorf("WebSocketQueue dead-letter queue = %v, want WebSocketDLQ", r)
	}
	var mapped bool
	for _, id := range tpl.ofType("AWS::Lambda::EventSourceMapping") {
		p := asMap(get(tpl.resources()[id], "Properties"))
		if r, _, _ := getAtt(p["EventSourceArn"]); r != "WebSocketQueue" {
			continue
		}
		mapped = true
		if !isRef(p["FunctionName"], "WebSocketFunction") {
			t.Errorf("%s: WebSocketQueue triggers %v, want WebSocketFunction", id, p["FunctionName"])
		}
		if n, _ := asInt(p["BatchSize"]); n != 1 {
			t.Errorf("%s: BatchSize = %v, want 1 (one turn per invocation)", id, p["BatchSize"])
		}
		if !slices.Contains(asStrings(p["FunctionResponseTypes"]), "ReportBatchItemFailures") {
			t.Errorf("%s: FunctionResponseTypes = %v, want ReportBatchItemFailures", id, p["FunctionResponseTypes"])
		}
	}
	if !mapped {
		t.Error("no event source mapping from WebSocketQueue to WebSocketFunction")
	}
	env := tpl.env("WebSocketFunction")
	for name, res := range map[string]string{"LAMBENT_WEBSOCKET_QUEUE_URL": "WebSocketQueue", "LAMBENT_WEBSOCKET_TABLE": "WebSocketConnectionsTable", "LAMBENT_TABLE": "ResponsesTable"} {
		if !isRef(env[name], res) {
			t.Errorf("WebSocketFunction: %s = %v, want !Ref %s", name, env[name], res)
		}
	}
	if env["LAMBENT_STORE"] != "dynamodb" {
		t.Errorf("WebSocketFunction: LAMBENT_STORE = %v, want dynamodb", env["LAMBENT_STORE"])
	}
}

// TestWebSocketConnectionsTable: the key schema and TTL of
// pkg/store/dynamodb (the connections table keeps responses through it),
// and nothing that keeps store=false data past its connection.
func TestWebSocketConnectionsTable(t *testing.T) {
	tpl := loadTemplate(t)
	schema := storeSchema(t)
	r := tpl.resource(t, "WebSocketConnectionsTable", "AWS::DynamoDB::Table")
	props := asMap(get(r, "Properties"))
	wantKeys := []any{
		map[string]any{"AttributeName": schema["attrPK"], "KeyType": "HASH"},
		map[string]any{"AttributeName": schema["attrSK"], "KeyType": "RANGE"},
	}
	if !reflect.DeepEqual(props["KeySchema"], wantKeys) {
		t.Errorf("KeySchema = %v, want %v", props["KeySchema"], wantKeys)
	}
	if got := asMap(props["TimeToLiveSpecification"]); got["AttributeName"] != schema["attrExpiresAt"] || got["Enabled"] != true {
		t.Errorf("TimeToLiveSpecification = %v, want %s enabled", got, schema["attrExpiresAt"])
	}
	if r["DeletionPolicy"] == "Retain" || get(props, "PointInTimeRecoverySpecification", "PointInTimeRecoveryEnabled") == true {
		t.Error("WebSocketConnectionsTable is retained or backed up: store=false data would outlive its connection")
	}
	for _, fn := range tpl.functions() {
		if fn == "WebSocketFunction" {
			continue
		}
		for _, p := range asList(get(tpl.resources()[fn], "Properties", "Policies")) {
			for _, st := range statements(get(p, "Statement")) {
				for _, res := range append(asList(st["Resource"]), st["Resource"]) {
					if classify(res) == "WebSocketConnectionsTable" {
						t.Errorf("%s may use WebSocketConnectionsTable: store=false data must not be readable through the HTTP API", fn)
					}
				}
			}
		}
	}
}

// TestPublicWebSocketNeedsAPIKeys: a $connect without IAM auth needs
// ApiKeysParameter.
func TestPublicWebSocketNeedsAPIKeys(t *testing.T) {
	tpl := loadTemplate(t)
	for _, auth := range []string{"AWS_IAM", "NONE"} {
		for _, keys := range []string{"", "/lambent/api-keys"} {
			failed := tpl.refused(t, map[string]string{"WebSocketAuthType": auth, "ApiKeysParameter": keys})
			if want := auth == "NONE" && keys == ""; (len(failed) > 0) != want {
				t.Errorf("WebSocketAuthType=%s ApiKeysParameter=%q: refused %v, want refused: %v", auth, keys, failed, want)
			}
		}
	}
}
