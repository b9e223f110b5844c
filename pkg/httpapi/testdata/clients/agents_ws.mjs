// Drives the gateway's WebSocket mode with the OpenAI Agents SDK for JS
// (@openai/agents): its Responses WebSocket transport
// (withResponsesWebSocketSession, one reused socket per session) with
// keep-alive pings. Prints one JSON object.
//
// Node 20 has no global WebSocket: the transport then uses the `ws`
// package the Agents SDK itself depends on (pinned by package-lock.json);
// it is also the implementation whose pongs the SDK's keep-alive watches.
import WebSocket from "ws";
import OpenAI from "openai";
import { Agent, tool, setTracingDisabled, withResponsesWebSocketSession } from "@openai/agents";
import { z } from "zod";

globalThis.WebSocket = WebSocket;
setTracingDisabled(true);

const [baseURL, key, otherKey] = process.argv.slice(2);
const out = { errors: [] };

// session runs fn over one WebSocket session authenticated with apiKey.
const session = (apiKey, fn) =>
  withResponsesWebSocketSession(fn, {
    providerOptions: { openAIClient: new OpenAI({ baseURL, apiKey, maxRetries: 0 }) },
    responsesWebSocketOptions: { pingIntervalMs: 25, pingTimeoutMs: 5000 },
  });

// attempt runs a streamed turn and reports its text, the last response id
// and the error envelope the server sent, if any.
async function attempt(run, agent, input, opts = {}) {
  const res = { text: "", lastResponseId: null, envelope: null, thrown: null };
  try {
    const rs = await run(agent, input, { ...opts, stream: true });
    for await (const ev of rs) {
      if (ev.type === "raw_model_stream_event" && ev.data?.type === "model" && ev.data.event?.type === "error") {
        res.envelope = { status: ev.data.event.status, code: ev.data.event.error?.code, param: ev.data.event.error?.param };
      }
      if (ev.type === "raw_model_stream_event" && ev.data?.type === "output_text_delta") res.text += ev.data.delta;
    }
    await rs.completed;
    if (rs.error) throw rs.error;
    res.lastResponseId = rs.lastResponseId;
    res.final = rs.finalOutput;
  } catch (e) {
    res.thrown = `${e?.name}: ${e?.message}`;
  }
  return res;
}

const guard = async (name, p) => {
  try {
    return await p;
  } catch (e) {
    out.errors.push(`${name}: ${e?.name}: ${e?.message}`);
    return null;
  }
};

const plain = new Agent({ name: "plain", model: "test-model", instructions: "Be brief." });
const noStore = new Agent({ name: "nostore", model: "test-model", modelSettings: { store: false } });
const ran = [];
const weather = tool({
  name: "get_weather",
  description: "Weather of a city",
  parameters: z.object({ city: z.string() }),
  execute: async ({ city }) => { ran.push(city); return `sunny in ${city}`; },
});
const toolAgent = new Agent({ name: "tools", model: "test-model", tools: [weather], modelSettings: { store: false } });
const hostedAgent = new Agent({
  name: "hosted", model: "test-model", modelSettings: { store: false },
  tools: [{ type: "hosted_tool", name: "calculator", providerData: { type: "lambent:calculator" } }],
});

let lastNoStore = null;
await guard("session", session(key, async ({ run }) => {
  const r1 = await run(plain, "Say hello");
  out.create = { text: r1.finalOutput, lastResponseId: r1.lastResponseId };
  const r2 = await run(plain, "My name is Ada", { previousResponseId: r1.lastResponseId });
  const r3 = await run(plain, "What is my name?", { previousResponseId: r2.lastResponseId });
  out.previous = { text: r3.finalOutput };

  const s1 = await run(noStore, "My name is Grace");
  const s2 = await run(noStore, "What is my name?", { previousResponseId: s1.lastResponseId });
  out.storeFalse = { text: s2.finalOutput };
  lastNoStore = s2.lastResponseId;

  const streamed = await attempt(run, plain, "Stream please");
  out.streamed = { text: streamed.text, final: streamed.final, thrown: streamed.thrown };

  // Sequential creates: three runs at once share the one socket, one
  // response at a time.
  const many = await Promise.all([1, 2, 3].map((i) => run(noStore, `Message ${i}`)));
  out.sequential = many.map((r) => r.finalOutput);

  const t = await run(toolAgent, "What is the weather in Rome?");
  out.tools = { text: t.finalOutput, ran };
  const h = await run(hostedAgent, "Please calculate 17*23");
  out.hosted = { text: h.finalOutput, items: h.newItems.map((i) => i.rawItem?.type) };

  // A failed continuation evicts the response it continued from.
  const e1 = await run(noStore, "My name is Linus");
  out.failedTurn = await attempt(run, noStore, "Please fail", { previousResponseId: e1.lastResponseId });
  out.afterEviction = await attempt(run, noStore, "What is my name?", { previousResponseId: e1.lastResponseId });
  // An invalid request gets an error envelope; the socket goes on.
  out.invalid = await attempt(run, new Agent({ name: "bad", model: "test-model", modelSettings: { temperature: 7 } }), "Hi");
  const after = await run(noStore, "Say hello");
  out.afterErrors = { text: after.finalOutput };
}));

// A new socket has no connection-local state.
await guard("newSocket", session(key, async ({ run }) => {
  out.newSocket = await attempt(run, noStore, "What is my name?", { previousResponseId: lastNoStore });
}));

// Auth: a wrong key is refused at the upgrade.
await guard("badKey", session("sk-wrong", async ({ run }) => {
  out.badKey = await attempt(run, plain, "Say hello");
}));
// Another tenant's key works, and does not see the first tenant's responses.
await guard("otherTenant", session(otherKey, async ({ run }) => {
  out.otherTenant = await attempt(run, plain, "What is my name?", { previousResponseId: out.create?.lastResponseId });
}));
console.log(JSON.stringify(out));
