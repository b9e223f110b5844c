// The npm `openai` SDK's client.responses.inputTokens.count against the
// gateway, with the SDK's default retries: prints the count it got, or the
// error it surfaced, as JSON. argv[3], when given, is the count's params
// as JSON.
import OpenAI from "openai";

const client = new OpenAI({ baseURL: process.argv[2], apiKey: process.argv[4] ?? "test" });
const params = process.argv[3] ? JSON.parse(process.argv[3]) : { model: "test-model", input: "How many tokens is this?" };
const out = {};
try {
  out.result = await client.responses.inputTokens.count(params);
} catch (e) {
  out.status = e.status;
  out.error = e.error;
  out.class = e.constructor.name;
}
console.log(JSON.stringify(out));
