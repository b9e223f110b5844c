// Drives the gateway with the official npm `openai` SDK: a plain create, a
// streamed create through client.responses.stream(...).finalResponse(),
// and a client-tool pause (requires_action) continued with
// previous_response_id, and a background response with background_options.
// Prints one JSON object with what it saw.
import OpenAI from "openai";

const client = new OpenAI({ baseURL: process.argv[2], apiKey: "test", maxRetries: 0 });
const out = {};

const r1 = await client.responses.create({ model: "test-model", input: "Say hello" });
out.plain = { status: r1.status, text: r1.output_text };

const stream = client.responses.stream({ model: "test-model", input: "Stream please" });
const events = [];
stream.on("event", (e) => events.push(e.type));
const final = await stream.finalResponse();
out.streamed = { status: final.status, text: final.output_text, events };

const tools = [{ type: "function", name: "get_weather", description: "Weather", parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] } }];
const pause = client.responses.stream({ model: "test-model", input: "Weather in Rome?", tools });
const paused = await pause.finalResponse();
out.paused = { status: paused.status, calls: paused.output.filter((i) => i.type === "function_call").map((i) => ({ call_id: i.call_id, name: i.name, arguments: i.arguments })) };

const cont = await client.responses.create({
  model: "test-model",
  previous_response_id: paused.id,
  tools,
  input: [{ type: "function_call_output", call_id: paused.output[0].call_id, output: "sunny, 25C" }],
});
out.continued = { status: cont.status, text: cont.output_text };

const got = await client.responses.retrieve(cont.id);
out.retrieved = got.id === cont.id;

// background_options (npm openai 7.59): a discounted completion window and
// a continuation id, on a background response polled to its end.
let bg = await client.responses.create({
  model: "test-model", input: "Take your time", background: true,
  background_options: { completion_window: "2h", continuation_id: "nightly-batch" },
});
for (let i = 0; i < 1000 && (bg.status === "queued" || bg.status === "in_progress"); i++) {
  await new Promise((resolve) => setTimeout(resolve, 10));
  bg = await client.responses.retrieve(bg.id);
}
out.background = { status: bg.status, text: bg.output_text };
console.log(JSON.stringify(out));
