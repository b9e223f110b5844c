// Drives the gateway with LangChain (@langchain/openai ChatOpenAI,
// useResponsesApi: true): invoke, stream, bindTools with a client tool
// (the tool call comes back for the app to run), and a Lambent hosted tool
// (already executed: no tool call for the app). Prints one JSON object.
import { ChatOpenAI } from "@langchain/openai";
import { HumanMessage, ToolMessage } from "@langchain/core/messages";

const llm = new ChatOpenAI({ model: "test-model", apiKey: "test", configuration: { baseURL: process.argv[2] }, useResponsesApi: true, maxRetries: 0 });
const out = { errors: [] };
const guard = (name, p) => p.catch((e) => { out.errors.push(`${name}: ${e?.name}: ${e?.message}`); return null; });
const text = (m) => (typeof m.content === "string" ? m.content : m.content.filter((c) => c.type === "text").map((c) => c.text).join(""));

const a = await guard("invoke", llm.invoke("Say hello"));
out.invoke = a && { text: text(a) };

const st = await guard("stream", llm.stream("Stream please"));
if (st) {
  let s = "";
  for await (const chunk of st) s += text(chunk);
  out.stream = { text: s };
}

const weather = { type: "function", function: { name: "get_weather", description: "Weather of a city", parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] } } };
const withTools = llm.bindTools([weather]);
const q = new HumanMessage("What is the weather in Rome?");
const b = await guard("bindTools", withTools.invoke([q]));
if (b) {
  out.bindTools = { calls: b.tool_calls.map((c) => ({ name: c.name, args: c.args })) };
  if (b.tool_calls.length > 0) {
    const c = b.tool_calls[0];
    const done = await guard("toolResult", withTools.invoke([q, b, new ToolMessage({ tool_call_id: c.id, content: `sunny in ${c.args.city}` })]));
    out.bindTools.text = done && text(done);
  }
}

const hosted = llm.bindTools([{ type: "lambent:calculator" }]);
const h = await guard("hosted", hosted.invoke("Please calculate 17*23"));
out.hosted = h && { text: text(h), toolCalls: h.tool_calls.length, outputs: (h.additional_kwargs.tool_outputs ?? []).map((o) => ({ type: o.type, name: o.name, output: o.output })) };
if (h) {
  const h2 = await guard("hostedHistory", hosted.invoke([new HumanMessage("Please calculate 17*23"), h, new HumanMessage("Thanks, and again?")]));
  out.hostedHistory = h2 && { text: text(h2) };
}
const hs = await guard("hostedStream", hosted.stream("Please calculate 17*23"));
if (hs) {
  let s = "";
  let calls = 0;
  for await (const chunk of hs) { s += text(chunk); calls += (chunk.tool_call_chunks ?? []).length; }
  out.hostedStream = { text: s, toolCallChunks: calls };
}
console.log(JSON.stringify(out));
