// The npm `openai` SDK's client.responses.create({stream: true,
// truncation: "auto", previous_response_id}) over a chain of responses
// that outgrows the model's context window: each turn's big question
// continues the last answer. Prints, per turn, the stream's event types
// and the final response's id, status and truncation, as JSON.
import OpenAI from "openai";

const client = new OpenAI({ baseURL: process.argv[2], apiKey: "test", maxRetries: 0 });
const turns = Number(process.argv[3] ?? 5);
const out = { errors: [], turns: [] };
let prev;
for (let i = 0; i < turns; i++) {
  try {
    const stream = await client.responses.create({
      model: "test-model", input: `q${i}` + "x".repeat(1000), truncation: "auto", previous_response_id: prev, stream: true,
    });
    const events = [];
    let final = null;
    for await (const ev of stream) {
      events.push(ev.type);
      if (ev.response) final = ev.response;
    }
    out.turns.push({ events, id: final?.id, status: final?.status, truncation: final?.truncation, error: final?.error ?? null });
    prev = final?.id;
  } catch (e) {
    out.errors.push(`turn ${i}: ${e?.name}: ${e?.status} ${e?.message}`);
    break;
  }
}
console.log(JSON.stringify(out));
