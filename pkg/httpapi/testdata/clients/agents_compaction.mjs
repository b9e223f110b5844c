// Drives the gateway with the OpenAI Agents SDK for JS (@openai/agents)
// with ModelSettings contextManagement (server-side compaction): a run
// whose function tool's output crosses the threshold (the SDK replays its
// items, stateless), a run sending that run's whole history back with a
// new message (the items before the compaction item included), then a
// streamed continuation of it (previousResponseId). Prints one JSON
// object: each run's final output and the item types of its model
// responses.
import OpenAI from "openai";
import { Agent, run, tool, setDefaultOpenAIClient, setOpenAIAPI, setTracingDisabled } from "@openai/agents";
import { z } from "zod";

setTracingDisabled(true);
setOpenAIAPI("responses");
setDefaultOpenAIClient(new OpenAI({ baseURL: process.argv[2], apiKey: "test", maxRetries: 0 }));
const out = { errors: [] };

const readPage = tool({
  name: "read_page",
  description: "Text of a page of the book",
  parameters: z.object({ page: z.number() }),
  execute: async ({ page }) => `content of page ${page}: ` + "x".repeat(5000),
});
const agent = new Agent({
  name: "reader",
  model: "test-model",
  tools: [readPage],
  modelSettings: { contextManagement: [{ type: "compaction", compactThreshold: 1000 }] },
});
const summary = (r) => ({ text: r.finalOutput, types: r.rawResponses.map((m) => m.output.map((o) => o.type)) });

try {
  const first = await run(agent, "Read page 1. I am Ada.");
  out.first = summary(first);
  const second = await run(agent, [...first.history, { role: "user", content: "What is my name?" }]);
  out.second = summary(second);
  const rs = await run(agent, "And again, my name?", { previousResponseId: second.lastResponseId, stream: true });
  for await (const _ of rs) { /* drain */ }
  await rs.completed;
  if (rs.error) throw rs.error;
  out.third = summary(rs);
} catch (e) {
  out.errors.push(`${e?.name}: ${e?.message}`);
}
console.log(JSON.stringify(out));
