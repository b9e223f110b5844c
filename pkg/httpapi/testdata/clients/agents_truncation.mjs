// Drives the gateway with the OpenAI Agents SDK for JS (@openai/agents)
// with ModelSettings truncation "auto": an agent reading pages with a
// function tool whose outputs outgrow the model's context window, run
// first replaying its items (stateless), then streamed as a continuation
// (previousResponseId, each turn continuing the last). Prints one JSON
// object: each run's final output and the ids of its model responses.
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
  execute: async ({ page }) => `content of page ${page}: ` + "x".repeat(2000),
});
const agent = new Agent({ name: "reader", model: "test-model", tools: [readPage], modelSettings: { truncation: "auto" } });
const summary = (r) => ({ text: r.finalOutput, responses: r.rawResponses.map((m) => m.responseId) });

let first = null;
try {
  first = await run(agent, "Read the book from page 1");
  out.run = summary(first);
} catch (e) {
  out.errors.push(`run: ${e?.name}: ${e?.message}`);
}
if (first) {
  try {
    const rs = await run(agent, "Read the book from page 4", { previousResponseId: first.lastResponseId, stream: true });
    for await (const _ of rs) { /* drain */ }
    await rs.completed;
    if (rs.error) throw rs.error;
    out.streamed = summary(rs);
  } catch (e) {
    out.errors.push(`streamed: ${e?.name}: ${e?.message}`);
  }
}
console.log(JSON.stringify(out));
