// Drives OpenAI's client-executed action tools through the Vercel AI SDK
// (openai.tools.shell, applyPatch and localShell, run by the app; a call
// cut by the output limit too), with
// generateText and streamText: the SDK validates every streamed item
// against OpenAI's shapes, output_item.added included. argv: gateway base
// URL. Prints one JSON object.
import { createOpenAI } from "@ai-sdk/openai";
import { generateText, streamText, stepCountIs } from "ai";

globalThis.AI_SDK_LOG_WARNINGS = false;
const openai = createOpenAI({ baseURL: process.argv[2], apiKey: "test" });
const cases = {
  shell: [
    { shell: openai.tools.shell({ execute: async () => ({ output: [{ stdout: "hi", stderr: "", outcome: { type: "exit", exitCode: 0 } }] }) }) },
    'call shell {"commands":["echo hi"]}',
  ],
  applyPatch: [
    { apply_patch: openai.tools.applyPatch({ execute: async () => ({ status: "completed", output: "patched" }) }) },
    'call apply_patch {"type":"create_file","path":"a.txt","diff":"+x"}',
  ],
  localShell: [
    { local_shell: openai.tools.localShell({ execute: async () => ({ output: "hi" }) }) },
    'call local_shell {"command":["echo","hi"]}',
  ],
  // The model's output limit cuts the turn in the middle of its call.
  cutPatch: [
    { apply_patch: openai.tools.applyPatch({ execute: async () => ({ status: "completed", output: "patched" }) }) },
    'cut apply_patch {"type":"delete_file","path":"a.txt"}',
  ],
};
const out = { errors: [] };
for (const [name, [tools, prompt]] of Object.entries(cases)) {
  try {
    const r = await generateText({ model: openai.responses("test-model"), prompt, tools, stopWhen: stepCountIs(3) });
    out[name] = { text: r.text, finishReason: r.finishReason };
  } catch (e) {
    out.errors.push(`${name}: ${e?.name}: ${e?.message}`.slice(0, 500));
  }
  try {
    const s = streamText({ model: openai.responses("test-model"), prompt, tools, stopWhen: stepCountIs(3) });
    const calls = [];
    for await (const p of s.fullStream) {
      if (p.type === "tool-call") calls.push(p.input);
      if (p.type === "error") out.errors.push(`${name} stream: ${String(p.error?.message ?? p.error)}`.slice(0, 500));
    }
    out[name + "Stream"] = { text: await s.text, finishReason: await s.finishReason, calls };
  } catch (e) {
    out.errors.push(`${name} stream: ${e?.name}: ${e?.message}`.slice(0, 500));
  }
}
console.log(JSON.stringify(out));
