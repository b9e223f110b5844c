// Validated structured text (text.format json_schema) through each
// client's own structured-output helper, against a model whose first
// answer fails the schema: the Vercel AI SDK (generateText and streamText
// with Output.object), the OpenAI Agents SDK (an agent with an outputType,
// run and streamed), npm `openai` (responses.parse, responses.stream) and
// LangChain (withStructuredOutput, jsonSchema method). Prints one JSON
// object: what each parsed, and the errors it threw.
import OpenAI from "openai";
import { zodTextFormat } from "openai/helpers/zod";
import { createOpenAI } from "@ai-sdk/openai";
import { generateText, streamText, Output } from "ai";
import { Agent, run, setDefaultOpenAIClient, setOpenAIAPI, setTracingDisabled } from "@openai/agents";
import { ChatOpenAI } from "@langchain/openai";
import { z } from "zod";

const baseURL = process.argv[2];
const Report = z.object({ score: z.number().int().min(0), summary: z.string() });
const prompt = "Assess the quarter.";
const client = new OpenAI({ baseURL, apiKey: "test", maxRetries: 0 });
const out = { errors: [] };
const guard = async (name, fn) => {
  try {
    out[name] = await fn();
  } catch (e) {
    out.errors.push(`${name}: ${e?.name}: ${e?.message}`);
  }
};

const ai = createOpenAI({ baseURL, apiKey: "test" });
await guard("aiGenerate", async () => {
  const g = await generateText({ model: ai.responses("test-model"), prompt, output: Output.object({ schema: Report }) });
  return { output: g.output, text: g.text };
});
await guard("aiStream", async () => {
  const s = streamText({ model: ai.responses("test-model"), prompt, output: Output.object({ schema: Report }) });
  let text = "";
  for await (const d of s.textStream) text += d;
  try {
    return { output: await s.output, text };
  } catch (e) {
    return { output: null, text, error: e?.name };
  }
});

setTracingDisabled(true);
setOpenAIAPI("responses");
setDefaultOpenAIClient(client);
const agent = new Agent({ name: "assessor", model: "test-model", instructions: "Assess.", outputType: Report });
await guard("agentsRun", async () => ({ output: (await run(agent, prompt)).finalOutput }));
await guard("agentsStream", async () => {
  const rs = await run(agent, prompt, { stream: true });
  for await (const _ of rs.toStream()) { /* drain */ }
  await rs.completed;
  if (rs.error) throw rs.error;
  return { output: rs.finalOutput };
});

const format = { text: { format: zodTextFormat(Report, "report") } };
await guard("openaiParse", async () => {
  const p = await client.responses.parse({ model: "test-model", input: prompt, ...format });
  return { output: p.output_parsed, text: p.output_text, items: p.output.map((i) => `${i.type}:${i.role}`) };
});
await guard("openaiStream", async () => {
  const st = client.responses.stream({ model: "test-model", input: prompt, ...format });
  const f = await st.finalResponse();
  return { output: f.output_parsed, text: f.output_text, items: f.output.map((i) => `${i.type}:${i.role}`) };
});

const llm = new ChatOpenAI({ model: "test-model", apiKey: "test", configuration: { baseURL }, useResponsesApi: true, maxRetries: 0 });
await guard("langchain", async () => ({ output: await llm.withStructuredOutput(Report, { method: "jsonSchema", name: "report" }).invoke(prompt) }));

console.log(JSON.stringify(out));
