// Drives WebSocket lanes (stream_id) and response.steer through the npm
// openai SDK's ResponsesWS: two lanes interleaved with store: false, each
// continued, a fork onto a third lane, an error on a lane, a steer, and a
// turn without stream_id. Prints one JSON object: the terminal messages in
// order (those of lanes running at once by stream_id: their order of
// arrival is the server's), and how many messages each stream_id ("" for
// none) got.
import WebSocket from "ws";
import OpenAI from "openai";
import { ResponsesWS } from "openai/resources/responses/ws";

globalThis.WebSocket = WebSocket;

const [baseURL, key] = process.argv.slice(2);
const out = { errors: [], terminals: [], counts: {}, sdkErrors: 0 };
const client = new OpenAI({ baseURL, apiKey: key, maxRetries: 0 });

const terminalTypes = new Set(["response.completed", "response.failed", "response.incomplete", "error", "response.steer.failed"]);
let queue = [];
let wake = null;

function summary(ev) {
  const s = { type: ev.type, stream_id: ev.stream_id ?? null };
  if (ev.response) {
    s.id = ev.response.id;
    s.text = ev.response.output
      .filter((it) => it.type === "message")
      .flatMap((it) => it.content)
      .map((c) => c.text ?? "")
      .join("");
  }
  if (ev.error) s.code = ev.error.code;
  if (ev.steer) s.steer = ev.steer;
  if (ev.type === "response.steer.failed") s.sequence_number = ev.sequence_number;
  return s;
}

async function next(n) {
  while (queue.length < n) await new Promise((r) => (wake = r));
  const got = queue.splice(0, n);
  got.sort((x, y) => (x.stream_id ?? "").localeCompare(y.stream_id ?? ""));
  out.terminals.push(...got);
  return got;
}

try {
  const ws = new ResponsesWS(client);
  // An error event is also reported here: counted, not thrown.
  ws.on("error", () => out.sdkErrors++);
  ws.on("event", (ev) => {
    const lane = ev.stream_id ?? "";
    out.counts[lane] = (out.counts[lane] ?? 0) + 1;
    if (terminalTypes.has(ev.type)) {
      queue.push(summary(ev));
      wake?.();
    }
  });
  const create = (stream_id, previous_response_id, input) =>
    ws.send({ type: "response.create", model: "test-model", store: false, input, stream_id, previous_response_id });

  // Two lanes in parallel: lane A's model call waits for lane B's.
  create("lane-a", undefined, "My name is Ann");
  create("lane-b", undefined, "My name is Bob");
  const [a1, b1] = await next(2);
  create("lane-a", a1.id, "What is my name?");
  create("lane-b", b1.id, "What is my name?");
  const [a2, b2] = await next(2);
  // A fork of lane A onto lane C.
  create("lane-c", a2.id, "What is my name?");
  await next(1);
  // An error on a lane.
  create("lane-a", "resp_missing", "What is my name?");
  await next(1);
  // A steer of lane B's latest response.
  ws.send({ type: "response.steer", previous_response_id: b2.id, input: "Be brief." });
  await next(1);
  // No stream_id.
  create(undefined, undefined, "Hi");
  await next(1);
  ws.close();
} catch (e) {
  out.errors.push(`${e?.name}: ${e?.message}`);
}
console.log(JSON.stringify(out));
process.exit(0);
