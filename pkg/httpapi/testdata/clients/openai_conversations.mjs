// Drives the Conversations API with the npm `openai` SDK
// (client.conversations.*, responses.create({conversation})) and the
// OpenAI Agents SDK (run(..., { conversationId })). Prints one JSON object.
import OpenAI from "openai";
import { Agent, run, tool, setDefaultOpenAIClient, setOpenAIAPI, setTracingDisabled } from "@openai/agents";
import { z } from "zod";

const client = new OpenAI({ baseURL: process.argv[2], apiKey: "test", maxRetries: 0 });
const out = { errors: [] };
const text = (it) => (it.type === "message" ? `${it.role}:${it.content.map((c) => c.text).join("")}` : it.type);
const list = async (id) => {
  const all = [];
  for await (const it of client.conversations.items.list(id, { order: "asc", limit: 2 })) all.push(text(it));
  return all;
};

const conv = await client.conversations.create({ items: [{ type: "message", role: "user", content: "My name is Ada" }], metadata: { topic: "names" } });
out.created = { id: conv.id, object: conv.object, metadata: conv.metadata, created: conv.created_at > 0 };
const r1 = await client.responses.create({ model: "test-model", conversation: conv.id, input: "What is my name?" });
out.answer = { text: r1.output_text, conversation: r1.conversation };

const stream = client.responses.stream({ model: "test-model", conversation: { id: conv.id }, input: "Hello there" });
const final = await stream.finalResponse();
out.streamed = { status: final.status, text: final.output_text, conversation: final.conversation };

const added = await client.conversations.items.create(conv.id, { items: [{ type: "message", role: "user", content: "extra" }] });
const extra = added.data[0].id;
out.added = { object: added.object, n: added.data.length, first: added.first_id === extra };
const got = await client.conversations.items.retrieve(extra, { conversation_id: conv.id });
out.retrieved = text(got);
out.items = await list(conv.id);
const afterDelete = await client.conversations.items.delete(extra, { conversation_id: conv.id });
out.itemDeleted = { object: afterDelete.object, id: afterDelete.id === conv.id };
out.itemsAfterDelete = (await list(conv.id)).length;

const updated = await client.conversations.update(conv.id, { metadata: { topic: "other" } });
out.updated = (await client.conversations.retrieve(conv.id)).metadata.topic === "other" && updated.metadata.topic === "other";

try {
  await client.responses.create({ model: "test-model", conversation: conv.id, previous_response_id: r1.id, input: "x" });
  out.errors.push("conversation with previous_response_id was accepted");
} catch (e) {
  out.exclusive = { status: e.status, param: e.param ?? e.error?.param };
}

// The Agents SDK in a conversation: its own turns and a function tool it
// runs itself, each model call with only the new items.
setTracingDisabled(true);
setOpenAIAPI("responses");
setDefaultOpenAIClient(client);
const agentConv = await client.conversations.create({});
const agent = new Agent({ name: "plain", model: "test-model", instructions: "Be brief." });
try {
  await run(agent, "My name is Cy", { conversationId: agentConv.id });
  const r = await run(agent, "What is my name?", { conversationId: agentConv.id });
  out.agents = { text: r.finalOutput };
  const weather = tool({
    name: "get_weather",
    description: "Weather of a city",
    parameters: z.object({ city: z.string() }),
    execute: async ({ city }) => `sunny in ${city}`,
  });
  const toolAgent = new Agent({ name: "tools", model: "test-model", tools: [weather] });
  const rt = await run(toolAgent, "What is the weather in Rome?", { conversationId: agentConv.id });
  out.agentsTool = { text: rt.finalOutput };
  out.agentItems = await list(agentConv.id);
} catch (e) {
  out.errors.push(`agents: ${e?.name}: ${e?.message}`);
}

const deleted = await client.conversations.delete(conv.id);
out.deleted = { object: deleted.object, deleted: deleted.deleted };
try {
  await client.conversations.retrieve(conv.id);
  out.errors.push("deleted conversation still readable");
} catch (e) {
  out.afterDelete = e.status;
}
console.log(JSON.stringify(out));
