// Drives an MCP tool through the official npm `openai` SDK: a call without
// approval, streamed (responses.stream(...).finalResponse()) and not, and
// an approval round trip. argv: gateway base URL, MCP server URL. Prints
// what it saw as JSON.
import OpenAI from "openai";

const client = new OpenAI({ baseURL: process.argv[2], apiKey: "test", maxRetries: 0 });
const mcp = (requireApproval) => [{ type: "mcp", server_label: "ts", server_url: process.argv[3], require_approval: requireApproval, headers: { "X-Secret": "npm-secret" } }];
const items = (r) => r.output.map((i) => ({ type: i.type, name: i.name ?? null, output: i.output ?? null, error: i.error ?? null, approval_request_id: i.approval_request_id ?? null, tools: i.tools?.map((t) => t.name) ?? null }));
const out = {};

const input = 'call shout {"text":"hello"}';
const r = await client.responses.create({ model: "test-model", input, tools: mcp("never") });
out.plain = { status: r.status, text: r.output_text, items: items(r), tools: r.tools };

const stream = client.responses.stream({ model: "test-model", input, tools: mcp("never") });
const events = [];
stream.on("event", (e) => events.push(e.type));
const f = await stream.finalResponse();
out.streamed = { status: f.status, text: f.output_text, items: items(f), events };

const paused = await client.responses.create({ model: "test-model", input: 'call broken {}', tools: mcp("always") });
const request = paused.output.find((i) => i.type === "mcp_approval_request");
const resumed = await client.responses.create({
  model: "test-model",
  previous_response_id: paused.id,
  tools: mcp("always"),
  input: [{ type: "mcp_approval_response", approval_request_id: request.id, approve: true }],
});
out.approval = { paused: { status: paused.status, items: items(paused) }, request: request.id, resumed: { status: resumed.status, text: resumed.output_text, items: items(resumed) } };
console.log(JSON.stringify(out));
