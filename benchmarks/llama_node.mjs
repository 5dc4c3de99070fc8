// llama.cpp through node-llama-cpp's prebuilt binaries (npm), for benchmarks/slm_speed.py.
//   node benchmarks/llama_node.mjs FOLDER GGUF PROMPT_FILE NEW_TOKENS THREADS
// Prints one JSON line per prompt in PROMPT_FILE (a JSON list of strings): prompt tokens,
// prefill and greedy decode seconds, load seconds, and the process's peak RSS in MiB.
import { pathToFileURL } from "node:url";
import { readFileSync } from "node:fs";
import path from "node:path";

const [modules, gguf, promptFile, newTokens, threads] = process.argv.slice(2);
const lib = await import(pathToFileURL(path.join(modules, "node_modules", "node-llama-cpp", "dist", "index.js")).href);
const llama = await lib.getLlama({ gpu: false, build: "never", logLevel: "error" });
let start = performance.now();
const model = await llama.loadModel({ modelPath: gguf, gpuLayers: 0 });
const context = await model.createContext({ contextSize: 2048, batchSize: 512, threads: Number(threads) });
const loadS = (performance.now() - start) / 1000;
const sequence = context.getSequence();
const rows = [];
for (const prompt of JSON.parse(readFileSync(promptFile, "utf8"))) {
  const ids = model.tokenize(prompt, true);
  await sequence.clearHistory();
  start = performance.now();
  await sequence.evaluateWithoutGeneratingNewTokens(ids.slice(0, -1));
  const prefillS = (performance.now() - start) / 1000;
  start = performance.now();
  let count = 0;
  // The last prompt token yields the first new token; the rest are greedy decode steps.
  for await (const token of sequence.evaluate(ids.slice(-1), { temperature: 0 })) {
    if (++count >= Number(newTokens)) break;
  }
  const decodeS = (performance.now() - start) / 1000;
  rows.push({ prompt_tokens: ids.length, prefill_s: prefillS, decode_s: decodeS, new_tokens: count,
              load_s: loadS, peak_rss_mb: process.resourceUsage().maxRSS / 1024,
              cpu: llama.cpuMathCores ?? null });
}
console.log(JSON.stringify(rows));
await context.dispose(); await model.dispose(); await llama.dispose();
