// Drives a request-declared MCP server through the Vercel AI SDK's
// provider-defined tool openai.tools.mcp (generateText and streamText),
// which validates every item and event against OpenAI's shapes. argv:
// gateway base URL, MCP server URL. Prints one JSON object.
import { createOpenAI } from "@ai-sdk/openai";
import { generateText, streamText } from "ai";

globalThis.AI_SDK_LOG_WARNINGS = false;
const [baseURL, serverUrl] = process.argv.slice(2);
const openai = createOpenAI({ baseURL, apiKey: "test" });
const tools = { ts: openai.tools.mcp({ serverLabel: "ts", serverUrl, requireApproval: "never" }) };
const prompt = 'call shout {"text":"hello"}';
const out = { errors: [] };
const parts = (content) => content.filter((c) => c.type !== "text").map((c) => ({ type: c.type, name: c.toolName, providerExecuted: !!c.providerExecuted, output: c.output ?? null }));

try {
  const g = await generateText({ model: openai.responses("test-model"), prompt, tools });
  out.generate = { text: g.text, parts: parts(g.content) };
} catch (e) {
  out.errors.push(`generate: ${e?.name}: ${e?.message}`.slice(0, 500));
}

try {
  const s = streamText({ model: openai.responses("test-model"), prompt, tools });
  for await (const p of s.fullStream) {
    if (p.type === "error") out.errors.push(`stream: ${String(p.error?.message ?? p.error)}`.slice(0, 500));
  }
  out.stream = { text: await s.text, parts: parts(await s.content) };
} catch (e) {
  out.errors.push(`stream: ${e?.name}: ${e?.message}`.slice(0, 500));
}
console.log(JSON.stringify(out));
