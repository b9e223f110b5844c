// Reads responses whose output holds a server-side compaction item
// (context_management) with the Vercel AI SDK (generateText, streamText,
// a history built from response.messages, which the SDK sends back as
// item references when store is on) and LangChain (ChatOpenAI,
// useResponsesApi: invoke, stream, a history). Prints one JSON object:
// what each saw, and every error.
import { createOpenAI } from "@ai-sdk/openai";
import { generateText, streamText } from "ai";
import { ChatOpenAI } from "@langchain/openai";
import { HumanMessage } from "@langchain/core/messages";

const baseURL = process.argv[2];
const big = "I am Ada. " + "x".repeat(5000);
const out = { errors: [] };
const guard = (name, p) => p.catch((e) => { out.errors.push(`${name}: ${e?.name}: ${e?.message}`); return null; });

const openai = createOpenAI({ baseURL, apiKey: "test" });
const providerOptions = { openai: { contextManagement: [{ type: "compaction", compactThreshold: 1000 }] } };
const g = await guard("generateText", generateText({ model: openai.responses("test-model"), prompt: big, providerOptions }));
if (g) {
  out.aiGenerate = { text: g.text, kinds: g.content.map((c) => c.kind ?? c.type) };
  const again = await guard("generateTextHistory", generateText({ model: openai.responses("test-model"), providerOptions,
    messages: [{ role: "user", content: big }, ...g.response.messages, { role: "user", content: "What is my name?" }] }));
  out.aiHistory = again && { text: again.text };
}
const s = streamText({ model: openai.responses("test-model"), prompt: big, providerOptions, onError: ({ error }) => out.errors.push(`streamText: ${error?.message}`) });
const parts = [];
let streamed = "";
for await (const p of s.fullStream) {
  parts.push(p.type === "custom" ? `custom:${p.kind}` : p.type);
  if (p.type === "text-delta") streamed += p.text;
}
out.aiStream = { text: streamed, custom: parts.filter((p) => p.startsWith("custom")) };

const llm = new ChatOpenAI({ model: "test-model", apiKey: "test", configuration: { baseURL }, useResponsesApi: true, maxRetries: 0,
  modelKwargs: { context_management: [{ type: "compaction", compact_threshold: 1000 }] } });
const text = (m) => (typeof m.content === "string" ? m.content : m.content.filter((c) => c.type === "text").map((c) => c.text).join(""));
const a = await guard("invoke", llm.invoke(big));
out.lcInvoke = a && { text: text(a) };
if (a) {
  const h = await guard("invokeHistory", llm.invoke([new HumanMessage(big), a, new HumanMessage("What is my name?")]));
  out.lcHistory = h && { text: text(h) };
}
const st = await guard("stream", llm.stream(big));
if (st) {
  let t = "";
  for await (const chunk of st) t += text(chunk);
  out.lcStream = { text: t };
}
console.log(JSON.stringify(out));
