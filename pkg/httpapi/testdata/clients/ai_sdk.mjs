// Drives the gateway with the Vercel AI SDK (`ai` + `@ai-sdk/openai`,
// openai.responses(...)): generateText, streamText, client tools over several
// steps, a Lambent hosted tool, and chat history built from
// response.messages (which the SDK sends back as item references when
// store is on). Prints one JSON object with what it saw.
import { createOpenAI } from "@ai-sdk/openai";
import { generateText, streamText, tool, stepCountIs } from "ai";
import { z } from "zod";

const baseURL = process.argv[2];
// Hosted tools are not AI SDK tools: the documented way to add a request
// field the SDK does not model is a fetch wrapper.
const withHosted = (names) => async (url, init) => {
  if (init?.body && String(url).endsWith("/responses")) {
    const body = JSON.parse(init.body);
    body.tools = [...(body.tools ?? []), ...names.map((n) => ({ type: `lambent:${n}` }))];
    init = { ...init, body: JSON.stringify(body) };
  }
  return fetch(url, init);
};
const plain = createOpenAI({ baseURL, apiKey: "test" });
const hosted = createOpenAI({ baseURL, apiKey: "test", fetch: withHosted(["calculator"]) });
const out = {};

const g = await generateText({ model: plain.responses("test-model"), prompt: "Say hello" });
out.generate = { text: g.text, finishReason: g.finishReason };

const s = streamText({ model: plain.responses("test-model"), prompt: "Stream please" });
let streamed = "";
for await (const d of s.textStream) streamed += d;
out.stream = { text: streamed, finishReason: await s.finishReason };

const ran = [];
const weather = tool({
  description: "Weather of a city",
  inputSchema: z.object({ city: z.string() }),
  execute: async ({ city }) => {
    ran.push(city);
    return `sunny in ${city}`;
  },
});
const multi = await generateText({
  model: plain.responses("test-model"),
  prompt: "What is the weather in Rome?",
  tools: { get_weather: weather },
  stopWhen: stepCountIs(4),
});
out.clientTools = { text: multi.text, steps: multi.steps.length, ran };

let errors = [];
const h = await generateText({
  model: hosted.responses("test-model"),
  prompt: "Please calculate 17*23",
  stopWhen: stepCountIs(3),
}).catch((e) => {
  errors.push(String(e?.name ?? "") + ": " + String(e?.message ?? e));
  return null;
});
out.hosted = h && {
  text: h.text,
  steps: h.steps.length,
  toolCalls: h.steps.flatMap((st) => st.toolCalls.map((c) => ({ name: c.toolName, providerExecuted: !!c.providerExecuted }))),
  toolResults: h.steps.flatMap((st) => st.toolResults.map((r) => ({ name: r.toolName, output: r.output }))),
};

try {
  const hs = streamText({ model: hosted.responses("test-model"), prompt: "Please calculate 17*23" });
  const parts = [];
  for await (const p of hs.fullStream) {
    if (p.type === "tool-call" || p.type === "tool-result") parts.push({ type: p.type, name: p.toolName, providerExecuted: !!p.providerExecuted, output: p.output });
    if (p.type === "error") errors.push("hostedStream: " + String(p.error?.message ?? p.error));
  }
  out.hostedStream = { text: await hs.text, parts };
} catch (e) {
  errors.push("hostedStream: " + String(e?.message ?? e));
}

// History the way the AI SDK docs build a chat: earlier turns' response
// messages go back in; with store on the SDK sends them as item references.
try {
  const first = await generateText({ model: plain.responses("test-model"), prompt: "My name is Ada" });
  const messages = [{ role: "user", content: "My name is Ada" }, ...first.response.messages, { role: "user", content: "What is my name?" }];
  const second = await generateText({ model: plain.responses("test-model"), messages });
  out.history = { first: first.text, second: second.text };
} catch (e) {
  errors.push("history: " + String(e?.message ?? e));
}
out.errors = errors;
console.log(JSON.stringify(out));
