// chat_template_ref.js — the independent reference for `zeroc prepare --jsonl`
// (cli/chat_format.h): a tokenizer directory's real chat_template rendered by npm's
// @huggingface/jinja (the Jinja engine transformers.js runs apply_chat_template with), then
// encoded by npm's
// @huggingface/tokenizers with every added token matched, as transformers' apply_chat_template
// (tokenize=True: add_special_tokens=False) does. Run by tests/test_sft.py.
//
//   node chat_template_ref.js TOKENIZER_DIR CONVERSATIONS.json OUT.json [generation]
//       CONVERSATIONS.json: a list of message lists [{role, content}]; writes a list of
//       {text, ids, tokens}: the rendered text (add_generation_prompt false; true with the
//       word "generation", the prompt `zeroc sample --chat` feeds the model), its ids, and each
//       id's bytes as a list of numbers (an added token: its content's UTF-8; else its
//       model.vocab string through GPT-2's byte-to-unicode map). DATE_STRING in the environment
//       is passed as date_string (apply_chat_template's keyword).
"use strict";
const fs = require("fs");
const path = require("path");
const { Template } = require("@huggingface/jinja");
const { Tokenizer } = require("@huggingface/tokenizers");

const [dir, convPath, outPath, generation] = process.argv.slice(2);
const json = JSON.parse(fs.readFileSync(path.join(dir, "tokenizer.json"), "utf8"));
const cfg = JSON.parse(fs.readFileSync(path.join(dir, "tokenizer_config.json"), "utf8"));
const tok = new Tokenizer(json, {});
const name = (t) => (t && typeof t === "object" ? t.content : t);

// GPT-2's byte-to-unicode map, written out independently of zeroc
const charByte = new Map();
for (let byte = 0, extra = 0; byte < 256; byte++) {
  const self = (byte >= 0x21 && byte <= 0x7e) || (byte >= 0xa1 && byte <= 0xac) || byte >= 0xae;
  charByte.set(self ? String.fromCodePoint(byte) : String.fromCodePoint(256 + extra++), byte);
}
const idText = new Map();
for (const [s, id] of Object.entries(json.model.vocab))
  idText.set(id, [...s].map((c) => charByte.get(c)));
for (const a of json.added_tokens || []) idText.set(a.id, [...Buffer.from(a.content, "utf8")]);

const template = new Template(cfg.chat_template);
const out = JSON.parse(fs.readFileSync(convPath, "utf8")).map((messages) => {
  const text = template.render({
    messages,
    bos_token: name(cfg.bos_token) || "",
    eos_token: name(cfg.eos_token) || "",
    add_generation_prompt: generation === "generation",
    ...(process.env.DATE_STRING ? { date_string: process.env.DATE_STRING } : {}),
  });
  const ids = tok.encode(text, { add_special_tokens: false }).ids;
  return { text, ids, tokens: ids.map((id) => idText.get(id)) };
});
fs.writeFileSync(outPath, JSON.stringify(out));
