// Clients that keep their own history and send the whole of it each turn
// with a conversation set: the Vercel AI SDK (providerOptions.openai
// .conversation; it leaves out the items that have an id, but sends tool
// results, which have none, every time) and the npm openai SDK used the
// way OpenAI's function-calling guide builds its input (input +=
// response.output, then the function_call_output), each over three turns
// with a client tool. argv: gateway base URL. Prints one JSON object: the
// answers, the conversation's item types, and every request refused.
import OpenAI from "openai";
import { createOpenAI } from "@ai-sdk/openai";
import { generateText, tool, stepCountIs } from "ai";
import { z } from "zod";

const out = { errors: [], refused: [] };
const recordRefusals = async (url, init) => {
  const res = await fetch(url, init);
  if (res.status >= 400) out.refused.push({ status: res.status, path: new URL(url).pathname, body: await res.clone().text() });
  return res;
};
const client = new OpenAI({ baseURL: process.argv[2], apiKey: "test", maxRetries: 0, fetch: recordRefusals });
const itemTypes = async (id) => {
  const all = [];
  for await (const it of client.conversations.items.list(id, { order: "asc" })) all.push(it.type === "message" ? it.role : it.type);
  return all;
};

// The AI SDK: one generateText a turn over the app's messages.
try {
  const conv = await client.conversations.create({});
  const provider = createOpenAI({ baseURL: process.argv[2], apiKey: "test", fetch: recordRefusals });
  const weather = tool({
    description: "Weather of a city",
    inputSchema: z.object({ city: z.string() }),
    execute: async ({ city }) => `sunny in ${city}`,
  });
  const messages = [];
  const answers = [];
  for (const prompt of ["What is the weather in Rome?", "Thanks. What did you find again?", "And once more: what did you find again?"]) {
    messages.push({ role: "user", content: prompt });
    const r = await generateText({
      model: provider.responses("test-model"),
      messages,
      tools: { get_weather: weather },
      stopWhen: stepCountIs(4),
      providerOptions: { openai: { conversation: conv.id } },
    });
    messages.push(...r.response.messages);
    answers.push(r.text);
  }
  out.aiSdk = { answers, items: await itemTypes(conv.id) };
} catch (e) {
  out.errors.push(`aiSdk: ${e?.name}: ${e?.message}`);
}

// npm openai: input += response.output; input += function_call_output.
try {
  const conv = await client.conversations.create({});
  const tools = [{ type: "function", name: "get_weather", description: "Weather of a city", parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] } }];
  const input = [];
  const answers = [];
  for (const prompt of ["What is the weather in Rome?", "Thanks. What did you find again?", "And once more: what did you find again?"]) {
    input.push({ role: "user", content: prompt });
    for (;;) {
      const r = await client.responses.create({ model: "test-model", conversation: conv.id, input, tools });
      input.push(...r.output);
      const calls = r.output.filter((i) => i.type === "function_call");
      if (!calls.length) {
        answers.push(r.output_text);
        break;
      }
      for (const c of calls) input.push({ type: "function_call_output", call_id: c.call_id, output: `sunny in ${JSON.parse(c.arguments).city}` });
    }
  }
  out.npm = { answers, items: await itemTypes(conv.id) };
} catch (e) {
  out.errors.push(`npm: ${e?.name}: ${e?.message}`);
}
console.log(JSON.stringify(out));
