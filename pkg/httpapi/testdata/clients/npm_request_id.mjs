// The npm `openai` SDK surfaces the gateway's request ids: `_request_id` on
// a response, `requestID` on an error. Prints what it saw as JSON.
import OpenAI from "openai";

const client = new OpenAI({ baseURL: process.argv[2], apiKey: "test", maxRetries: 0 });
const out = {};
const r = await client.responses.create({ model: "test-model", input: "Say hello" });
out.created = r._request_id;
try {
  await client.responses.retrieve("resp_missing");
} catch (e) {
  out.failed = e.requestID;
  out.status = e.status;
}
console.log(JSON.stringify(out));
