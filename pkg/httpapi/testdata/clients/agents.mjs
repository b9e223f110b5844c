// Drives the gateway with the OpenAI Agents SDK for JS (@openai/agents):
// run, streamed run, a function tool, a Lambent hosted tool and a
// continuation with previousResponseId. Prints one JSON object.
import OpenAI from "openai";
import { Agent, run, tool, setDefaultOpenAIClient, setOpenAIAPI, setTracingDisabled } from "@openai/agents";
import { z } from "zod";

setTracingDisabled(true);
setOpenAIAPI("responses");
setDefaultOpenAIClient(new OpenAI({ baseURL: process.argv[2], apiKey: "test", maxRetries: 0 }));
const out = { errors: [] };
const guard = (name, p) => p.catch((e) => { out.errors.push(`${name}: ${e?.name}: ${e?.message}`); return null; });

const agent = new Agent({ name: "plain", model: "test-model", instructions: "Be brief." });
const r1 = await guard("run", run(agent, "Say hello"));
out.run = r1 && { text: r1.finalOutput, lastResponseId: r1.lastResponseId };

try {
  const rs = await run(agent, "Stream please", { stream: true });
  let text = "";
  for await (const ev of rs.toTextStream()) text += ev;
  await rs.completed;
  if (rs.error) throw rs.error;
  out.streamed = { text, final: rs.finalOutput };
} catch (e) {
  out.errors.push(`streamed: ${e?.name}: ${e?.message}`);
}

const ran = [];
const weather = tool({
  name: "get_weather",
  description: "Weather of a city",
  parameters: z.object({ city: z.string() }),
  execute: async ({ city }) => { ran.push(city); return `sunny in ${city}`; },
});
const toolAgent = new Agent({ name: "tools", model: "test-model", tools: [weather] });
const r2 = await guard("tools", run(toolAgent, "What is the weather in Rome?"));
out.tools = r2 && { text: r2.finalOutput, ran };

const calculator = { type: "hosted_tool", name: "calculator", providerData: { type: "lambent:calculator" } };
const hostedAgent = new Agent({ name: "hosted", model: "test-model", tools: [calculator] });
const r3 = await guard("hosted", run(hostedAgent, "Please calculate 17*23"));
out.hosted = r3 && {
  text: r3.finalOutput,
  items: r3.newItems.map((i) => ({ type: i.type, raw: i.rawItem?.type, name: i.rawItem?.name, output: i.rawItem?.output ?? i.output })),
};
try {
  const r3s = await run(hostedAgent, "Please calculate 17*23", { stream: true });
  for await (const _ of r3s) { /* drain */ }
  await r3s.completed;
  if (r3s.error) throw r3s.error;
  out.hostedStream = { text: r3s.finalOutput, items: r3s.newItems.map((i) => ({ type: i.type, raw: i.rawItem?.type })) };
} catch (e) {
  out.errors.push(`hostedStream: ${e?.name}: ${e?.message}`);
}

if (r1) {
  const r4 = await guard("previous", run(agent, "My name is Ada", { previousResponseId: r1.lastResponseId }));
  const r5 = r4 && (await guard("previous2", run(agent, "What is my name?", { previousResponseId: r4.lastResponseId })));
  out.previous = r5 && { text: r5.finalOutput };
}
console.log(JSON.stringify(out));
