// tokenizer_ref.js — the independent reference for zeroc's GPT-2 tokenizer: npm's tiktoken
// (encoding "gpt2"), run by tests/test_tokenizer.py and bench/tokenizer.sh.
//
//   node tokenizer_ref.js encode DOCS.json OUT.json
//       DOCS.json is a list of documents, each a list of segments: {"t": text} (valid text,
//       encoded as ordinary text: no special tokens) and {"b": byte} (one byte that is not valid
//       UTF-8, encoded as that byte's token); writes each document's ids, a list of lists.
//   node tokenizer_ref.js llmc-bin OUT VERSION
//       writes llm.c's gpt2_tokenizer.bin (version 1 or 2) from tiktoken's token bytes.
//   node tokenizer_ref.js bench FILE REPEATS
//       prints tiktoken's single-threaded encoding speed on FILE (UTF-8) in MB/s.
"use strict";
const fs = require("fs");
const { get_encoding } = require("tiktoken");

const enc = get_encoding("gpt2");
const [cmd, a, b] = process.argv.slice(2);

if (cmd === "encode") {
  const docs = JSON.parse(fs.readFileSync(a, "utf8"));
  const out = docs.map((segs) => {
    const ids = [];
    for (const s of segs) {
      if ("t" in s) for (const id of enc.encode_ordinary(s.t)) ids.push(id);
      else ids.push(enc.encode_single_token(new Uint8Array([s.b])));
    }
    return ids;
  });
  fs.writeFileSync(b, JSON.stringify(out));
} else if (cmd === "llmc-bin") {
  const n = 50257, version = Number(b);
  const header = new Int32Array(256);
  header[0] = 20240328;
  header[1] = version;
  header[2] = n;
  if (version === 2) header[3] = 50256;
  const parts = [Buffer.from(header.buffer)];
  for (let i = 0; i < n; i++) {
    const t = enc.decode_single_token_bytes(i);
    parts.push(Buffer.from([t.length]), Buffer.from(t));
  }
  fs.writeFileSync(a, Buffer.concat(parts));
} else if (cmd === "bench") {
  const text = fs.readFileSync(a, "utf8");
  const bytes = Buffer.byteLength(text, "utf8");
  const repeats = Number(b || 3);
  enc.encode_ordinary(text.slice(0, 100000)); // warm up
  let best = Infinity, ntok = 0;
  for (let r = 0; r < repeats; r++) {
    const t0 = process.hrtime.bigint();
    ntok = enc.encode_ordinary(text).length;
    const dt = Number(process.hrtime.bigint() - t0) / 1e9;
    best = Math.min(best, dt);
  }
  console.log(`tiktoken: ${bytes} bytes, ${ntok} tokens, ${best.toFixed(3)} s, ` +
              `${(bytes / 1e6 / best).toFixed(2)} MB/s`);
} else {
  console.error("usage: node tokenizer_ref.js encode|llmc-bin|bench ...");
  process.exit(2);
}
enc.free();
