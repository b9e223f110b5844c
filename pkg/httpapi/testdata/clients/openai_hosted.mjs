// Drives a hosted tool loop through the official npm `openai` SDK, streamed
// (responses.stream(...).finalResponse(), which accumulates every event)
// and not. Prints the item types and events it saw.
import OpenAI from "openai";

const client = new OpenAI({ baseURL: process.argv[2], apiKey: "test", maxRetries: 0 });
const tools = [{ type: "lambent:calculator" }];
const out = {};
const r = await client.responses.create({ model: "test-model", input: "Please calculate 17*23", tools });
out.plain = { status: r.status, text: r.output_text, items: r.output.map((i) => ({ type: i.type, output: i.output ?? null })) };
const stream = client.responses.stream({ model: "test-model", input: "Please calculate 17*23", tools });
const events = [];
stream.on("event", (e) => events.push(e.type));
const f = await stream.finalResponse();
out.streamed = { status: f.status, text: f.output_text, items: f.output.map((i) => ({ type: i.type, output: i.output ?? null })), events };
console.log(JSON.stringify(out));
