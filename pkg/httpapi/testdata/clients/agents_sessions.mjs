// Drives client-side conversation state with the OpenAI Agents SDK for JS
// across two runs: OpenAIConversationsSession (items kept through
// /v1/conversations), OpenAIResponsesCompactionSession (responses.compact),
// and the previousResponseId and conversationId run options, each with a
// Lambent hosted tool, an MCP server declared in the request
// (hostedMcpTool) and a function tool the SDK runs itself. The second run
// asks "again": the model answers with the tool results it sees in its
// history. argv: gateway base URL, MCP server URL. Prints one JSON object.
import OpenAI from "openai";
import {
  Agent,
  run,
  tool,
  hostedMcpTool,
  setDefaultOpenAIClient,
  setOpenAIAPI,
  setTracingDisabled,
  OpenAIConversationsSession,
  OpenAIResponsesCompactionSession,
} from "@openai/agents";
import { z } from "zod";

setTracingDisabled(true);
setOpenAIAPI("responses");
const out = { errors: [], refused: [] };
// Every request the gateway refused, with the body sent, for the report.
const recordRefusals = async (url, init) => {
  const res = await fetch(url, init);
  if (res.status >= 400) out.refused.push({ status: res.status, method: init?.method, path: new URL(url).pathname, body: init?.body });
  return res;
};
const client = new OpenAI({ baseURL: process.argv[2], apiKey: "test", maxRetries: 0, fetch: recordRefusals });
setDefaultOpenAIClient(client);

const calculator = { type: "hosted_tool", name: "calculator", providerData: { type: "lambent:calculator" } };
const weather = tool({
  name: "get_weather",
  description: "Weather of a city",
  parameters: z.object({ city: z.string() }),
  execute: async ({ city }) => `sunny in ${city}`,
});
const kinds = {
  hosted: { tools: [calculator], first: "Please calculate 17*23" },
  mcp: { tools: [hostedMcpTool({ serverLabel: "ts", serverUrl: process.argv[3], requireApproval: "never" })], first: 'call shout {"text":"hello"}' },
  function: { tools: [weather], first: "What is the weather in Rome?" },
};
const agentOf = (kind) => new Agent({ name: kind, model: "test-model", tools: kinds[kind].tools });

const again = "What did you find again?";

// twoRuns runs the kind's first prompt, then again with what opts(r1)
// gives (input2(r1) as its input, else the question); it records the
// answers under out[name][kind].
async function twoRuns(name, kind, opts1, opts2, input2 = () => again) {
  try {
    const agent = agentOf(kind);
    const r1 = await run(agent, kinds[kind].first, await opts1());
    const r2 = await run(agent, input2(r1), await opts2(r1));
    (out[name] ??= {})[kind] = { first: r1.finalOutput, again: r2.finalOutput };
  } catch (e) {
    out.errors.push(`${name}/${kind}: ${e?.name}: ${e?.message}`);
  }
}

const listTypes = async (id) => {
  const all = [];
  for await (const it of client.conversations.items.list(id, { order: "asc" })) all.push(it.type === "message" ? `${it.role}` : it.type);
  return all;
};

for (const kind of Object.keys(kinds)) {
  const session = new OpenAIConversationsSession({ client });
  await twoRuns("conversationsSession", kind, () => ({ session }), () => ({ session }));
  try {
    out.conversationsSession[kind].items = await listTypes(await session.getSessionId());
  } catch (e) {
    out.errors.push(`conversationsSession/${kind} items: ${e?.name}: ${e?.message}`);
  }

  const compacting = new OpenAIResponsesCompactionSession({ client, model: "gpt-4.1", compactionMode: "input", shouldTriggerCompaction: () => false });
  await twoRuns(
    "compactionSession",
    kind,
    () => ({ session: compacting }),
    async () => {
      await compacting.runCompaction({ force: true });
      return { session: compacting };
    },
  );

  await twoRuns("history", kind, () => ({}), () => ({}), (r1) => [...r1.history, { role: "user", content: again }]);
  await twoRuns("previousResponseId", kind, () => ({}), (r1) => ({ previousResponseId: r1.lastResponseId }));
  let convId;
  await twoRuns(
    "conversationId",
    kind,
    async () => {
      convId = (await client.conversations.create({})).id;
      return { conversationId: convId };
    },
    () => ({ conversationId: convId }),
  );
}
console.log(JSON.stringify(out));
