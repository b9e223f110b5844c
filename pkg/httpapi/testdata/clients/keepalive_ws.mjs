// Runs WebSocket-mode turns against a server that follows every event with
// the keep-alive message of the API Gateway front door
// ({"type":"keepalive","sequence_number":N}, pkg/wsapi/apigw), through the
// npm openai SDK's ResponsesWS and the Agents SDK's Responses WebSocket
// transport, and reports what each saw. Prints one JSON object.
import WebSocket from "ws";
import OpenAI from "openai";
import { ResponsesWS } from "openai/resources/responses/ws";
import { Agent, setTracingDisabled, withResponsesWebSocketSession } from "@openai/agents";

globalThis.WebSocket = WebSocket;
setTracingDisabled(true);

const [baseURL, key] = process.argv.slice(2);
const out = { errors: [] };
const client = new OpenAI({ baseURL, apiKey: key, maxRetries: 0 });

// npm openai: the raw event stream of one turn.
try {
  const ws = new ResponsesWS(client);
  const seen = { text: "", keepalives: 0, errors: [], terminal: null };
  ws.on("error", (e) => seen.errors.push(String(e?.message ?? e)));
  ws.send({ type: "response.create", model: "test-model", input: "hello" });
  for await (const item of ws.stream()) {
    // The stream yields connection events and {type: "message", message: <event>}.
    if (item.type !== "message") continue;
    const ev = item.message;
    if (ev.type === "keepalive") seen.keepalives++;
    if (ev.type === "response.output_text.delta") seen.text += ev.delta;
    if (ev.type === "response.completed" || ev.type === "response.failed" || ev.type === "error") {
      seen.terminal = ev.type;
      break;
    }
  }
  ws.close();
  out.npm = seen;
} catch (e) {
  out.errors.push(`npm: ${e?.name}: ${e?.message}`);
}

// Agents SDK: a streamed run over its WebSocket transport.
try {
  const agent = new Agent({ name: "plain", model: "test-model", instructions: "Be brief." });
  out.agents = await withResponsesWebSocketSession(
    async ({ run: wsRun }) => {
      const res = { text: "", thrown: null, lastResponseId: null };
      const rs = await wsRun(agent, "hello", { stream: true });
      for await (const ev of rs) {
        if (ev.type === "raw_model_stream_event" && ev.data?.type === "output_text_delta") res.text += ev.data.delta;
      }
      await rs.completed;
      if (rs.error) res.thrown = String(rs.error);
      res.lastResponseId = rs.lastResponseId;
      return res;
    },
    { providerOptions: { openAIClient: client } },
  );
} catch (e) {
  out.errors.push(`agents: ${e?.name}: ${e?.message}`);
}

console.log(JSON.stringify(out));
process.exit(0);
