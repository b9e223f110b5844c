// Drives the gateway with the official npm `openai` SDK: a streamed
// create (responses.create({stream: true})) that the model provider
// refuses. Prints one JSON object: the events seen and the error thrown
// (the SDK's APIError: its status, code and message).
import OpenAI from "openai";

const client = new OpenAI({ baseURL: process.argv[2], apiKey: "test", maxRetries: 0 });
const out = { events: [] };
try {
  const stream = await client.responses.create({ model: "test-model", input: "hi", stream: true });
  for await (const e of stream) out.events.push(e.type);
} catch (err) {
  out.error = { apiError: err instanceof OpenAI.APIError, status: err.status ?? null, code: err.code ?? null, message: err.message };
}
console.log(JSON.stringify(out));
