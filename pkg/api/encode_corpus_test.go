package api

import (
	"encoding/json"
	"math"
	"strconv"
)

// corpusStrings exercise every escaping rule of encoding/json.
var corpusStrings = []string{
	"",
	"plain",
	`quote " backslash \ slash /`,
	"new\nline\ttab\rcr\bbs\fff",
	"\x00\x01\x07\x1f\x7f",
	"<b>html</b> & more <script>",
	"unicode é ✓ 😀 中文",
	"sep\u2028line\u2029para",
	"bad utf8 \xff\xfe end",
	"\xc3\x28 and \xe2\x82",
	"trunc \xe2\x80",
	"\xed\xa0\x80 surrogate",
	"literal \ufffd replacement",
	"\u007f\u0080\u00a0",
}

var corpusFloats = []float64{0, 1, -1, 0.5, 0.1, 0.7, 2, 1e21, 1e20, 9.99e20, 1e-7, 1e-6, 9.9e-7, 123456789.123, 1e100, -1e-100,
	math.MaxFloat64, math.SmallestNonzeroFloat64, math.Copysign(0, -1), 1.5e300, 3.14159e-10}

var corpusRaw = []json.RawMessage{
	nil,
	json.RawMessage(`null`),
	json.RawMessage(`{"type":"object"}`),
	json.RawMessage("{\n  \"type\" : \"object\",\n\t\"properties\": { \"a\": {\"type\": \"string\", \"description\": \"x < y & z > w\"} } ,\r\n \"required\" : [ \"a\" ] }"),
	json.RawMessage(`[1, 2.5e10 , true,false,null, "s p a c e", "sep` + "\u2028" + `"]`),
	json.RawMessage(`"just a string with \n escape and \u003c"`),
	json.RawMessage(`  42  `),
	json.RawMessage(`{"weird":"\ud83d\ude00","bad":"` + "\xff" + `"}`),
}

type corpusCase struct {
	name string
	v    any // what json.Marshal is given
}

func ptrS(s string) *string { return &s }

func corpusParts() []ContentPart {
	var ps []ContentPart
	for i, s := range corpusStrings {
		ps = append(ps,
			ContentPart{Type: PartOutputText, Text: s},
			ContentPart{Type: PartInputText, Text: s},
			ContentPart{Type: PartText, Text: s},
			ContentPart{Type: PartSummaryText, Text: s},
			ContentPart{Type: PartReasoningText, Text: s},
			ContentPart{Type: PartRefusal, Refusal: s, Text: "ignored"},
			ContentPart{Type: PartInputImage, ImageURL: s, Detail: corpusStrings[(i+1)%len(corpusStrings)]},
			ContentPart{Type: PartInputFile, FileID: s, FileData: corpusStrings[(i+2)%len(corpusStrings)], FileURL: corpusStrings[(i+3)%len(corpusStrings)], Filename: s},
			ContentPart{Type: s, Text: s},
		)
	}
	for _, r := range corpusRaw {
		ps = append(ps,
			ContentPart{Type: PartOutputText, Text: "a", Annotations: []json.RawMessage{r}},
			ContentPart{Type: PartOutputText, Text: "a", Annotations: []json.RawMessage{r, r}, Logprobs: []json.RawMessage{r}},
		)
	}
	ps = append(ps,
		ContentPart{Type: PartOutputText, Annotations: []json.RawMessage{}, Logprobs: []json.RawMessage{}},
		ContentPart{Type: PartOutputText, Logprobs: []json.RawMessage{json.RawMessage(`{"token":"a","logprob":-0.5,"bytes":[97],"top_logprobs":[]}`)}},
		ContentPart{Type: PartInputImage},
		ContentPart{Type: PartInputImage, FileID: "file_1", Detail: "high"},
		ContentPart{Type: PartInputImage, ImageURL: "https://x/y.png?a=1&b=<2>", FileID: "file_1"},
		ContentPart{Type: PartInputFile},
		ContentPart{},
	)
	return ps
}

func corpusItems() []Item {
	parts := corpusParts()
	var items []Item
	for i, s := range corpusStrings {
		t := corpusStrings[(i+5)%len(corpusStrings)]
		items = append(items,
			Item{Type: ItemMessage, ID: s, Status: t, Role: s, Content: parts[i%len(parts) : i%len(parts)+3], Phase: s},
			Item{Type: ItemFunctionCall, ID: s, Status: t, CallID: s, Name: t, Arguments: s},
			Item{Type: ItemFunctionCallOutput, ID: s, Status: t, CallID: t, Output: s},
			Item{Type: ItemFunctionCallOutput, ID: s, Status: t, CallID: t, Output: s, IsError: true},
			Item{Type: ItemReasoning, ID: s, Status: t, EncryptedContent: s, Summary: []ContentPart{{Type: PartSummaryText, Text: s}}},
			Item{Type: ItemReference, ID: s, Status: t, Role: "ignored"},
		)
	}
	items = append(items,
		Item{Type: ItemMessage},
		Item{Type: ItemMessage, Content: []ContentPart{}},
		Item{Type: ItemMessage, ID: "msg_1", Status: ItemCompleted, Role: RoleAssistant, Content: parts, Phase: "final_answer"},
		Item{Type: ItemFunctionCall},
		Item{Type: ItemFunctionCallOutput},
		Item{Type: ItemFunctionCallOutput, OutputParts: []ContentPart{}},
		Item{Type: ItemFunctionCallOutput, Output: "ignored", OutputParts: []ContentPart{{Type: PartInputText, Text: "x"}, {Type: PartInputImage, ImageURL: "u"}}, IsError: true},
		Item{Type: ItemReasoning},
		Item{Type: ItemReasoning, Summary: []ContentPart{}, Content: []ContentPart{}},
		Item{Type: ItemReasoning, Status: ItemCompleted, Content: []ContentPart{{Type: PartReasoningText, Text: "think"}}, EncryptedContent: "enc"},
		Item{Type: ItemReference},
	)
	return items
}

func corpusTools() []Tool {
	tr, fa := true, false
	var tools []Tool
	for _, r := range corpusRaw {
		tools = append(tools,
			Tool{Type: ToolFunction, Name: "f", Parameters: r},
			Tool{Type: ToolFunction, Name: "f", Description: ptrS("d"), Parameters: r, Strict: &tr},
			Tool{Type: "lambent:calculator", Parameters: r},
			Tool{Type: ToolMCP, ServerLabel: "l", AllowedTools: r, RequireApproval: r},
		)
	}
	for _, s := range corpusStrings {
		tools = append(tools,
			Tool{Type: ToolFunction, Name: s, Description: ptrS(s), Strict: &fa},
			Tool{Type: s, Name: s, Description: ptrS(s), ServerLabel: s, ServerURL: s, ServerDescription: s, Authorization: s, Headers: map[string]string{s: s}},
		)
	}
	tools = append(tools,
		Tool{},
		Tool{Type: ToolFunction},
		Tool{Type: ToolFunction, Parameters: json.RawMessage{}, Description: ptrS("")},
		Tool{Type: ToolMCP, ServerLabel: "gh", ServerURL: "https://mcp.example/x?a=1&b=2", ServerDescription: "desc", Strict: &tr, Description: ptrS(""),
			Headers: map[string]string{"X-Key": "secret"}, Authorization: "Bearer secret",
			AllowedTools: json.RawMessage(`["a", "b"]`), RequireApproval: json.RawMessage(` "never" `)},
		Tool{Type: "lambent:fetch_url"},
	)
	return tools
}

func corpusToolChoices() []ToolChoice {
	return []ToolChoice{
		{},
		{Mode: ToolChoiceAuto},
		{Mode: ToolChoiceNone},
		{Mode: ToolChoiceRequired},
		{Mode: "weird <&>"},
		{Type: ToolFunction, Name: "get_weather"},
		{Type: ToolFunction, Name: "x", Mode: "ignored"},
		{Type: ToolFunction},
		{Type: "allowed_tools", Mode: ToolChoiceAuto, Tools: []ToolRef{{Type: ToolFunction, Name: "f"}, {Type: "lambent:calculator"}}},
		{Type: "allowed_tools", Mode: ToolChoiceRequired},
		{Type: "allowed_tools", Tools: []ToolRef{}},
		{Type: "other", Mode: "m"},
		{Type: "other"},
	}
}

func corpusResponses() []*Response {
	tr := true
	ci, mo, mt := int64(1767225601), 0, 7
	full := &Response{
		ID: "resp_1", Object: "response", CreatedAt: 1767225600, CompletedAt: &ci, Status: StatusCompleted,
		IncompleteDetails: &IncompleteDetails{Reason: ReasonMaxOutputTokens}, Model: "gpt <x>",
		PreviousResponseID: ptrS("resp_0"), Instructions: ptrS("Be \"nice\"\n"),
		Output: corpusItems(), Error: &ResponseError{Code: "c", Message: "m\u2028"},
		Tools: corpusTools(), ToolChoice: ToolChoice{Type: ToolFunction, Name: "f"}, Truncation: "auto", ParallelToolCalls: true,
		Text: TextConfig{Format: TextFormat{Type: FormatJSONSchema, Name: "n", Description: ptrS("d"), Schema: corpusRaw[3], Strict: &tr}, Verbosity: "low"},
		TopP: 0.9, PresencePenalty: -0.5, FrequencyPenalty: 1e-7, TopLogprobs: 5, Temperature: 1e21,
		Reasoning:       &Reasoning{Effort: ptrS("high"), Summary: ptrS("auto")},
		Usage:           &Usage{InputTokens: 1, OutputTokens: 2, TotalTokens: 3, InputTokensDetails: InputTokensDetails{CachedTokens: 4}, OutputTokensDetails: OutputTokensDetails{ReasoningTokens: 5}},
		MaxOutputTokens: &mo, MaxToolCalls: &mt, Store: true, Background: true, ServiceTier: "flex",
		Metadata:         map[string]string{"b": "2", "a": "1", "é": "<", "A": "", "": "empty", "z\x00": "nul", "bad\xff": "x", "\u2028": "sep"},
		SafetyIdentifier: ptrS("user-1"), PromptCacheKey: ptrS(""),
	}
	rs := []*Response{{}, benchResponse(), full,
		{Output: []Item{}, Tools: []Tool{}, Metadata: map[string]string{}},
		{Reasoning: &Reasoning{}, Usage: &Usage{}, Text: TextConfig{Format: TextFormat{Type: FormatJSONObject, Description: ptrS(""), Schema: json.RawMessage{}}}},
		{Text: TextConfig{Format: TextFormat{Type: FormatJSONSchema, Schema: json.RawMessage(`null`), Strict: new(bool)}}},
		{Metadata: map[string]string{"k": "v"}},
		{Tools: []Tool{{Type: ToolFunction, Name: "f", Parameters: json.RawMessage(`{"type":"object"}`)}}, ToolChoice: ToolChoice{Type: "allowed_tools", Mode: "auto", Tools: []ToolRef{{Type: "function", Name: "f"}}}},
	}
	for i, f := range corpusFloats {
		rs = append(rs, &Response{ID: strconv.Itoa(i), TopP: f, Temperature: -f, PresencePenalty: f / 3, FrequencyPenalty: f * 0.7})
	}
	for _, s := range corpusStrings {
		rs = append(rs, &Response{ID: s, Object: s, Status: Status(s), Model: s, Instructions: ptrS(s), Truncation: s, ServiceTier: s,
			Metadata: map[string]string{s: s, s + "x": s}, Error: &ResponseError{Code: s, Message: s}, IncompleteDetails: &IncompleteDetails{Reason: s}})
	}
	for _, tc := range corpusToolChoices() {
		rs = append(rs, &Response{ToolChoice: tc})
	}
	return rs
}

func corpusEvents() []*StreamEvent {
	i0, i1, i3 := 0, 1, 3
	s := func(v string) *string { return &v }
	evs := []*StreamEvent{
		{},
		{Type: EventResponseCreated, Response: benchResponse()},
		{Type: EventResponseCompleted, SequenceNumber: 99, Response: corpusResponses()[2]},
		{Type: EventOutputItemAdded, SequenceNumber: 2, OutputIndex: &i0, Item: &Item{Type: ItemMessage, ID: "msg_1", Status: ItemInProgress, Role: RoleAssistant}},
		{Type: EventOutputItemDone, SequenceNumber: 2, OutputIndex: &i1, Item: &Item{Type: ItemFunctionCall, ID: "fc", CallID: "c", Name: "n", Arguments: `{"a":1}`}},
		{Type: EventContentPartAdded, ItemID: "msg_1", OutputIndex: &i0, ContentIndex: &i0, Part: &ContentPart{Type: PartOutputText}},
		{Type: EventContentPartDone, ItemID: "msg_1", OutputIndex: &i0, ContentIndex: &i1, Part: &ContentPart{Type: PartRefusal, Refusal: "no"}},
		{Type: EventOutputTextDelta, ItemID: "msg_1", OutputIndex: &i0, ContentIndex: &i0, Delta: s("")},
		{Type: EventOutputTextDelta, ItemID: "msg_1", OutputIndex: &i0, ContentIndex: &i0, Delta: s("Hi"), Logprobs: []any{}},
		{Type: EventOutputTextDelta, ItemID: "msg_1", OutputIndex: &i0, ContentIndex: &i0, Delta: s("Hi"),
			Logprobs: []any{json.RawMessage(`{"token": "Hi", "logprob": -0.1}`), map[string]any{"token": "<", "logprob": 0.5}, nil, 1e21}},
		{Type: EventOutputTextDone, ItemID: "msg_1", OutputIndex: &i0, ContentIndex: &i0, Text: s("Hi there")},
		{Type: EventOutputTextAnnotation, ItemID: "msg_1", OutputIndex: &i0, ContentIndex: &i0, AnnotationIndex: &i3,
			Annotation: json.RawMessage(`{"type": "url_citation", "url": "https://x/?a=1&b=2"}`)},
		{Type: EventOutputTextAnnotation, Annotation: map[string]any{"b": 1, "a": []int{1, 2}}},
		{Type: EventOutputTextAnnotation, Annotation: (*Item)(nil)},
		{Type: EventOutputTextAnnotation, Annotation: "str<>"},
		{Type: EventReasoningSummaryPartAdd, SummaryIndex: &i0, Part: &ContentPart{Type: PartSummaryText}},
		{Type: EventRefusalDelta, Delta: s("no"), Refusal: s("")},
		{Type: EventFunctionCallArgsDone, ItemID: "fc", OutputIndex: &i1, Arguments: s(`{"q":"<x>"}`)},
		{Type: EventResponseFailed, Response: &Response{Status: StatusFailed, Error: &ResponseError{Code: "server_error", Message: "boom"}}},
		{Type: EventError, SequenceNumber: 5, Error: &ErrorPayload{Type: ErrTypeServer, Code: s("store_failed"), Message: "could not\nstore", Param: nil}},
		{Type: EventError, Error: &ErrorPayload{}},
	}
	ev := NewErrorEvent(InvalidRequest("input[0].content", "bad <%s>", "x"))
	evs = append(evs, &ev)
	for _, str := range corpusStrings {
		evs = append(evs, &StreamEvent{Type: str, ItemID: str, Delta: s(str), Text: s(str), Arguments: s(str), Refusal: s(str)})
	}
	return evs
}

func corpusErrors() []*Error {
	errs := []*Error{{}, InvalidRequest("", "plain"), InvalidRequestCode("p", "c", "m"), NotFound("id", "not_found", "no <such> response"),
		ServerError(nil, "internal error"), Conflict("conflict", "x")}
	for _, s := range corpusStrings {
		errs = append(errs, &Error{Type: s, Code: s, Param: s, Message: s})
	}
	return errs
}

// encodeCorpus lists every value the equivalence test encodes, as it is
// given to json.Marshal.
func encodeCorpus() []corpusCase {
	var cs []corpusCase
	add := func(kind string, i int, v any) { cs = append(cs, corpusCase{kind + "/" + strconv.Itoa(i), v}) }
	for i, p := range corpusParts() {
		add("part", i, p)
	}
	for i, it := range corpusItems() {
		add("item", i, it)
	}
	for i, t := range corpusTools() {
		add("tool", i, t)
	}
	for i, c := range corpusToolChoices() {
		add("toolchoice", i, c)
	}
	for i, r := range corpusResponses() {
		add("response", i, r)
	}
	for i, ev := range corpusEvents() {
		add("event", i, ev)
	}
	for i, e := range corpusErrors() {
		add("error", i, e)
		add("errorbody", i, ErrorBody{Error: e})
		add("errorbodyptr", i, &ErrorBody{Error: e})
	}
	add("errorbody-nil", 0, &ErrorBody{})
	items := corpusItems()
	for i, l := range []*ItemList{{}, {Object: "list", Data: []Item{}}, {Object: "list", Data: items, FirstID: &items[0].ID, LastID: ptrS(""), HasMore: true}} {
		add("itemlist", i, l)
	}
	for i, d := range []*DeleteResult{{}, {ID: "resp_<1>", Object: "response.deleted", Deleted: true}} {
		add("delete", i, d)
	}
	for i, u := range []*Usage{{}, {1, 2, 3, InputTokensDetails{-4}, OutputTokensDetails{math.MaxInt64}}} {
		add("usage", i, u)
	}
	for i, tc := range []*TextConfig{{}, {Format: TextFormat{Type: FormatText}, Verbosity: "high"}, &corpusResponses()[2].Text} {
		add("textconfig", i, tc)
	}
	for i, v := range corpusUnencodable() {
		add("unencodable", i, v)
	}
	return cs
}

// corpusUnencodable are values json.Marshal rejects.
func corpusUnencodable() []any {
	bad := Item{Type: "bogus", ID: "x"}
	return []any{
		bad, &bad,
		&Response{Output: []Item{bad}},
		&Response{Temperature: math.NaN()},
		&Response{TopP: math.Inf(1)},
		&Response{Tools: []Tool{{Type: ToolFunction, Parameters: json.RawMessage(`{bad`)}}},
		&Response{Text: TextConfig{Format: TextFormat{Schema: json.RawMessage(`{"a":1} {"b":2}`)}}},
		ContentPart{Type: PartOutputText, Annotations: []json.RawMessage{{}}},
		ContentPart{Type: PartOutputText, Logprobs: []json.RawMessage{json.RawMessage("[1,]")}},
		Tool{Type: ToolMCP, AllowedTools: json.RawMessage(`tru`)},
		&StreamEvent{Type: EventOutputItemDone, Item: &bad},
		&StreamEvent{Type: EventOutputTextAnnotation, Annotation: math.NaN()},
		&StreamEvent{Type: EventOutputTextDelta, Logprobs: []any{func() {}}},
		&ItemList{Data: []Item{bad}},
	}
}
