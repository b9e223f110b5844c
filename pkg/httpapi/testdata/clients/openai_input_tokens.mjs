// The npm `openai` SDK's client.responses.inputTokens.count against the
// gateway, with the SDK's default retries: prints the error it surfaced
// as JSON.
import OpenAI from "openai";

const client = new OpenAI({ baseURL: process.argv[2], apiKey: "test" });
const out = {};
try {
  out.result = await client.responses.inputTokens.count({ model: "test-model", input: "How many tokens is this?" });
} catch (e) {
  out.status = e.status;
  out.error = e.error;
  out.class = e.constructor.name;
}
console.log(JSON.stringify(out));
