/* test_bpe.c — the GPT-2 tokenizer's parts without a reference implementation (so without npm):
 * the pre-tokenizer's pieces on cases worked out by hand from GPT-2's pattern, the strict UTF-8
 * decoder on every code point and on each kind of malformed sequence, the character classes, the
 * merge loop on a tiny vocabulary written here (rank order, leftmost first on a tie, the array
 * and the heap paths, the cache), and threaded chunked encoding against one encoder; Llama 3's
 * and Qwen2's patterns on cases worked out by hand from theirs, and NFC by stretches on cases
 * known by hand. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "models/gpt2/bpe_parallel.h"
#include "models/gpt2/bpe_pretok.h"
#include "models/gpt2/hf_nfc.h"

/* The pieces of s[0..n) joined by '|', invalid bytes shown as <XX>. */
static const char *pieces(const char *s, size_t n)
{
    static char out[4096];
    size_t k = 0;
    for (size_t i = 0, end; i < n; i = end) {
        bool invalid;
        end = bpe_pretok_next((const uint8_t *)s, n, i, &invalid);
        if (i)
            out[k++] = '|';
        if (invalid)
            k += (size_t)snprintf(out + k, 8, "<%02X>", (unsigned char)s[i]);
        else
            for (size_t j = i; j < end; j++)
                out[k++] = s[j];
    }
    out[k] = 0;
    return out;
}

static void test_pieces(void)
{
    static const struct {
        const char *in, *want;
    } cases[] = {
        {"Hello world", "Hello| world"},
        {"it's they're we've I'm you'll he'd don't",
         "it|'s| they|'re| we|'ve| I|'m| you|'ll| he|'d| don|'t"},
        {"IT'S", "IT|'|S"},          /* contractions are lower case only */
        {"''s x'll", "''|s| x|'ll"}, /* a run of ' is punctuation */
        {"a  b", "a| | b"},          /* the last space joins the word */
        {"a\n\nb", "a|\n|\n|b"},     /* \s+(?!\S) leaves the last \n, then \s+ takes it */
        {"a \n b", "a| \n| b"},
        {"a  ", "a|  "}, /* at the end, the whole run */
        {"a\t b", "a|\t| b"},
        {"x \xc2\xa0y", "x| |\xc2\xa0|y"}, /* U+00A0 is white space but not the optional space */
        {" 123 45abc6", " 123| 45|abc|6"},
        {"3.14", "3|.|14"},
        {" !? x", " !?| x"},
        {"e\xcc\x81t\xc3\xa9", "e|\xcc\x81|t\xc3\xa9"}, /* a combining mark (Mn) is not a letter */
        {"\xe2\x85\xa7\xc2\xb2x", "\xe2\x85\xa7\xc2\xb2|x"}, /* Nl and No are numbers */
        {"a\xe2\x80\x8b"
         "b",
         "a|\xe2\x80\x8b|b"}, /* U+200B (Cf) is punctuation-like */
        {"a\xc2\x85"
         "b",
         "a|\xc2\x85|b"}, /* U+0085 is white space */
        {"\xf0\x9f\x98\x80\xf0\x9f\x98\x80 x", "\xf0\x9f\x98\x80\xf0\x9f\x98\x80| x"},
        {"\xe4\xb8\xad\xe6\x96\x87 ok", "\xe4\xb8\xad\xe6\x96\x87| ok"},
        {"a\xff"
         "b",
         "a|<FF>|b"},
        {"  \xff", "  |<FF>"}, /* the run ends where the valid text ends */
        {"'\xffs", "'|<FF>|s"},
        {"\xc3(", "<C3>|("},
        {"\xed\xa0\x80", "<ED>|<A0>|<80>"}, /* a surrogate */
        {"\xe2\x82", "<E2>|<82>"},          /* truncated */
    };
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
        const char *got = pieces(cases[k].in, strlen(cases[k].in));
        CHECK(!strcmp(got, cases[k].want), "pieces of '%s': got '%s', want '%s'", cases[k].in, got,
              cases[k].want);
    }
}

/* The pieces of valid UTF-8 s under Llama 3's pattern (max_digits 3) or Qwen2's (1), joined by
 * '|'. */
static const char *pieces_llama3(const char *s, int max_digits)
{
    static char out[4096];
    size_t k = 0, n = strlen(s);
    for (size_t i = 0, end; i < n; i = end) {
        end = bpe_pretok_llama3_next((const uint8_t *)s, n, i, max_digits);
        if (i)
            out[k++] = '|';
        for (size_t j = i; j < end; j++)
            out[k++] = s[j];
    }
    out[k] = 0;
    return out;
}

/* Llama 3's and Qwen2's patterns (bpe_pretok_llama3.c), on cases worked out by hand from the
 * regex: (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|
 * ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+ */
static void test_pieces_llama3(void)
{
    static const struct {
        const char *in, *want;
    } cases[] = {
        {"Hello world", "Hello| world"},
        {"IT'S it's we'RE I'd", "IT|'S| it|'s| we|'RE| I|'d"}, /* case folded, ASCII only */
        {"''s x'll 'hello", "''|s| x|'ll| '|hello"},           /* a run of ' is punctuation */
        {"(hello) \"x\"", "(hello|)| \"|x|\""}, /* one non-letter leads letters, not two */
        {"a  b", "a| | b"},
        {"a\n\nb", "a|\n\n|b"}, /* \s*[\r\n]+ takes the newlines */
        {"a \n b", "a| \n| b"},
        {"  \n  x", "  \n| | x"}, /* up to the last newline, then \s+(?!\S) */
        {"a  ", "a|  "},
        {"a\t b", "a|\t| b"},
        {"\tb", "\tb"},
        {"1234567", "123|456|7"},
        {" 123", " |123"},
        {"3.14", "3|.|14"},
        {" !? x", " !?| x"},
        {".\n\nx!\r\n", ".\n\n|x|!\r\n"}, /* punctuation takes the newlines after it */
        {"e\xcc\x81t", "e|\xcc\x81t"},    /* a combining mark is no letter: it leads one */
        {"\xe2\x85\xa7\xc2\xb2x", "\xe2\x85\xa7\xc2\xb2|x"},
        {"a\xc2\x85"
         "b",
         "a|\xc2\x85"
         "b"}, /* U+0085 is white space but neither \r nor \n: it leads letters */
        {"\xf0\x9f\x98\x80\xf0\x9f\x98\x80 x", "\xf0\x9f\x98\x80\xf0\x9f\x98\x80| x"},
        {"\xe4\xb8\xad\xe6\x96\x87 ok", "\xe4\xb8\xad\xe6\x96\x87| ok"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
        const char *got = pieces_llama3(cases[k].in, 3);
        CHECK(!strcmp(got, cases[k].want), "llama3 pieces of '%s': got '%s', want '%s'",
              cases[k].in, got, cases[k].want);
    }
    const char *q = pieces_llama3("x 1234 \xd9\xa3\xd9\xa4", 1);
    CHECK(!strcmp(q, "x| |1|2|3|4| |\xd9\xa3|\xd9\xa4"), "qwen2: one digit a piece: '%s'", q);
}

/* NFC by stretches (hf_nfc.h) on cases known by hand: text NFC leaves alone is reported as such
 * (ASCII, precomposed Latin, CJK, Cyrillic); decomposed accents compose, Hangul jamo join into
 * their syllable, a singleton (U+212B ANGSTROM SIGN) becomes its letter, marks reorder. U+11A7
 * (T_BASE, no trailing consonant) after an LV syllable stays: libutf8proc before
 * JuliaStrings/utf8proc#317 composes the two and deletes it, on a stretch that holds both. */
static void test_nfc(void)
{
    static const struct {
        const char *in, *want; /* want NULL: reported unchanged without normalizing */
    } cases[] = {
        {"plain ASCII", NULL},
        {"caf\xc3\xa9 na\xc3\xafve \xe4\xb8\xad\xe6\x96\x87 \xd0\xb6", NULL},
        {"cafe\xcc\x81!", "caf\xc3\xa9!"},
        {"x \xe1\x84\x80\xe1\x85\xa1\xe1\x86\xa8 y", "x \xea\xb0\x81 y"},
        {"\xe2\x84\xab", "\xc3\x85"},
        {"a\xcc\x81\xcc\xa3 z", "\xe1\xba\xa1\xcc\x81 z"}, /* ccc 230 after 220: reordered */
        {"\xcc\x81x", "\xcc\x81x"}, /* a mark first stays: nothing to compose with */
        /* U+AC00 U+11A7; L V U+11A7, L V U+11A8 */
        {"\xea\xb0\x80\xe1\x86\xa7", NULL},
        {"\xe1\x84\x80\xe1\x85\xa1\xe1\x86\xa7 \xe1\x84\x80\xe1\x85\xa1\xe1\x86\xa8",
         "\xea\xb0\x80\xe1\x86\xa7 \xea\xb0\x81"},
    };
    uint8_t *buf = NULL;
    size_t len = 0, cap = 0;
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
        bool same = false;
        zc_err err = {0};
        const char *in = cases[k].in, *want = cases[k].want;
        zc_status st = hf_nfc((const uint8_t *)in, strlen(in), &buf, &len, &cap, &same, &err);
        if (!want) /* NFC leaves it: said at once, without normalizing */
            want = in;
        bool ok = !st && (same ? !strcmp(want, in) && !cases[k].want
                               : len == strlen(want) && !memcmp(buf, want, len) && cases[k].want);
        CHECK(ok, "NFC of '%s': %s", in, st ? err.msg : same ? "unchanged" : "changed");
    }
    free(buf);
}

static int encode_cp(int32_t cp, uint8_t *b)
{
    if (cp < 0x80) {
        b[0] = (uint8_t)cp;
        return 1;
    }
    if (cp < 0x800) {
        b[0] = (uint8_t)(0xC0 | cp >> 6);
        b[1] = (uint8_t)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        b[0] = (uint8_t)(0xE0 | cp >> 12);
        b[1] = (uint8_t)(0x80 | (cp >> 6 & 0x3F));
        b[2] = (uint8_t)(0x80 | (cp & 0x3F));
        return 3;
    }
    b[0] = (uint8_t)(0xF0 | cp >> 18);
    b[1] = (uint8_t)(0x80 | (cp >> 12 & 0x3F));
    b[2] = (uint8_t)(0x80 | (cp >> 6 & 0x3F));
    b[3] = (uint8_t)(0x80 | (cp & 0x3F));
    return 4;
}

static void test_utf8(void)
{
    int bad = 0;
    for (int32_t cp = 0; cp <= 0x10FFFF; cp++) {
        uint8_t b[4];
        int len = encode_cp(cp, b);
        int32_t got = -1;
        int n = bpe_utf8_decode(b, (size_t)len, &got);
        bool surrogate = cp >= 0xD800 && cp <= 0xDFFF;
        if (surrogate ? n != 0 : (n != len || got != cp)) {
            if (bad++ < 5)
                CHECK(false, "U+%04X: decoded length %d, code point %X", cp, n, got);
        }
        if (len > 1 && bpe_utf8_decode(b, (size_t)len - 1, &got) != 0 && bad++ < 5)
            CHECK(false, "U+%04X cut short decodes", cp);
    }
    CHECK(bad == 0, "%d code points decode wrongly", bad);
    static const char *malformed[] = {"\xc0\x80",
                                      "\xc1\xbf",
                                      "\xe0\x80\x80",
                                      "\xe0\x9f\xbf",
                                      "\xf0\x80\x80\x80",
                                      "\xf0\x8f\xbf\xbf",
                                      "\xf4\x90\x80\x80",
                                      "\xf5\x80\x80\x80",
                                      "\xff",
                                      "\xfe",
                                      "\x80",
                                      "\xbf",
                                      "\xc3\x28",
                                      "\xe2\x28\xa1",
                                      "\xf0\x9f\x98\x28"};
    for (size_t k = 0; k < sizeof malformed / sizeof *malformed; k++) {
        int32_t cp;
        CHECK(bpe_utf8_decode((const uint8_t *)malformed[k], strlen(malformed[k]), &cp) == 0,
              "malformed sequence %zu decodes", k);
    }
}

static void test_classes(void)
{
    static const struct {
        int32_t cp;
        pretok_class want;
    } cases[] = {
        {'a', PRETOK_LETTER},    {'Z', PRETOK_LETTER},    {0x4E2D, PRETOK_LETTER},
        {0x00AA, PRETOK_LETTER}, {0x02B0, PRETOK_LETTER}, {'5', PRETOK_NUMBER},
        {0x00B2, PRETOK_NUMBER}, {0x2167, PRETOK_NUMBER}, {0x0663, PRETOK_NUMBER},
        {' ', PRETOK_SPACE},     {'\t', PRETOK_SPACE},    {'\n', PRETOK_SPACE},
        {0x0B, PRETOK_SPACE},    {0x0C, PRETOK_SPACE},    {'\r', PRETOK_SPACE},
        {0x85, PRETOK_SPACE},    {0xA0, PRETOK_SPACE},    {0x1680, PRETOK_SPACE},
        {0x2000, PRETOK_SPACE},  {0x200A, PRETOK_SPACE},  {0x2028, PRETOK_SPACE},
        {0x2029, PRETOK_SPACE},  {0x202F, PRETOK_SPACE},  {0x205F, PRETOK_SPACE},
        {0x3000, PRETOK_SPACE},  {0x1C, PRETOK_OTHER},    {0x1F, PRETOK_OTHER},
        {0x200B, PRETOK_OTHER},  {0xFEFF, PRETOK_OTHER},  {0x180E, PRETOK_OTHER},
        {0x0301, PRETOK_OTHER},  {0x0378, PRETOK_OTHER},  {0xE000, PRETOK_OTHER},
        {'\'', PRETOK_OTHER},    {0x1F600, PRETOK_OTHER}, {0, PRETOK_OTHER},
    };
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++)
        CHECK(bpe_pretok_class(cases[k].cp) == cases[k].want, "class of U+%04X: %d, want %d",
              cases[k].cp, bpe_pretok_class(cases[k].cp), cases[k].want);
}

/* --- a tiny vocabulary: the 256 bytes, then the merges below --- */

static char dir[] = "/tmp/zeroc-bpe-XXXXXX";

/* GPT-2's byte stand-ins: printable Latin-1 bytes are themselves, the others U+0100.. */
static int32_t stand_in(int b)
{
    int extra = 0;
    for (int c = 0; c < 256; c++) {
        bool self = (c >= '!' && c <= '~') || (c >= 0xA1 && c <= 0xAC) || c >= 0xAE;
        if (c == b)
            return self ? c : 256 + extra;
        extra += !self;
    }
    return -1;
}

static void write_vocab(const char *merges[], int nmerges)
{
    char path[128];
    snprintf(path, sizeof path, "%s/encoder.json", dir);
    FILE *f = fopen(path, "w");
    fputc('{', f);
    int id = 0;
    for (int b = 0; b < 256; b++)
        fprintf(f, "%s\"\\u%04x\": %d", b ? ", " : "", (unsigned)stand_in(b), id++);
    for (int m = 0; m < nmerges; m++) { /* "x y" -> "xy" */
        char joined[64];
        size_t k = 0;
        for (const char *p = merges[m]; *p; p++)
            if (*p != ' ')
                joined[k++] = *p;
        joined[k] = 0;
        fprintf(f, ", \"%s\": %d", joined, id++);
    }
    fputs("}\n", f);
    fclose(f);
    snprintf(path, sizeof path, "%s/vocab.bpe", dir);
    f = fopen(path, "w");
    fputs("#version: 0.2\n", f);
    for (int m = 0; m < nmerges; m++)
        fprintf(f, "%s\n", merges[m]);
    fclose(f);
}

/* The tokens of text, as their bytes joined by '|'. */
static const char *encoded(const bpe_vocab *v, bpe_encoder *e, const char *text, size_t n)
{
    static char out[8192];
    bpe_ids ids = {0};
    zc_err err = {0};
    size_t k = 0;
    if (bpe_encode(e, (const uint8_t *)text, n, &ids, &err)) {
        snprintf(out, sizeof out, "error: %s", err.msg);
        return out;
    }
    for (size_t i = 0; i < ids.n && k < sizeof out - 300; i++) {
        size_t len;
        const uint8_t *t = bpe_vocab_token(v, (int)ids.id[i], &len);
        if (i)
            out[k++] = '|';
        memcpy(out + k, t, len);
        k += len;
    }
    out[k] = 0;
    bpe_ids_free(&ids);
    return out;
}

static void test_merges(void)
{
    /* rank order decides, not position: "b c" outranks "a b"; "Ġ Ċ" and "Ċ Ċ" make the pieces
     * of white space show in the tokens */
    const char *m1[] = {"b c", "a b", "a a", "aa aa", "Ġ a", "Ġ Ċ", "Ċ Ċ"};
    write_vocab(m1, 7);
    bpe_vocab v;
    zc_err err = {0};
    zc_status st = bpe_vocab_load(&v, dir, true, &err);
    CHECK(!st, "tiny vocabulary: %s", err.msg);
    if (st)
        return;
    CHECK(v.n == 263 && v.nmerges == 7 && v.eot == -1, "n %d merges %zu eot %d", v.n, v.nmerges,
          v.eot);
    bpe_encoder *e;
    st = bpe_encoder_create(&e, &v, &err);
    CHECK(!st, "encoder: %s", err.msg);
    if (st) {
        bpe_vocab_free(&v);
        return;
    }
    CHECK(!strcmp(encoded(&v, e, "abc", 3), "a|bc"), "abc -> %s", encoded(&v, e, "abc", 3));
    CHECK(!strcmp(encoded(&v, e, "abd", 3), "ab|d"), "abd -> %s", encoded(&v, e, "abd", 3));
    /* equal ranks: leftmost first — "aaa" is aa|a, not a|aa */
    CHECK(!strcmp(encoded(&v, e, "aaa", 3), "aa|a"), "aaa -> %s", encoded(&v, e, "aaa", 3));
    CHECK(!strcmp(encoded(&v, e, "aaaaaaaaaa", 10), "aaaa|aaaa|aa"), "a x10 -> %s",
          encoded(&v, e, "aaaaaaaaaa", 10));
    CHECK(!strcmp(encoded(&v, e, " a", 2), " a"), "' a' -> %s", encoded(&v, e, " a", 2));
    /* white space: "  \n" alone is one piece; before a letter it is "  " + "\n" */
    CHECK(!strcmp(encoded(&v, e, "  \n", 3), " | \n"), "'  \\n' -> %s", encoded(&v, e, "  \n", 3));
    CHECK(!strcmp(encoded(&v, e, "  \nb", 4), " | |\n|b"), "'  \\nb' -> %s",
          encoded(&v, e, "  \nb", 4));
    CHECK(!strcmp(encoded(&v, e, "\n\n\nb", 4), "\n\n|\n|b"), "'\\n\\n\\nb' -> %s",
          encoded(&v, e, "\n\n\nb", 4));
    /* "a a" (rank 2) before "Ġ a" (rank 4): the space stays alone */
    CHECK(!strcmp(encoded(&v, e, " aaa", 4), " |aa|a"), "' aaa' -> %s", encoded(&v, e, " aaa", 4));
    /* the same again comes from the cache */
    CHECK(!strcmp(encoded(&v, e, "aaa aaa", 7), "aa|a| |aa|a"), "aaa aaa -> %s",
          encoded(&v, e, "aaa aaa", 7));
    /* long pieces (the heap path) merge as short ones do */
    for (int n = 120; n <= 140; n++) {
        char text[200], want[400];
        memset(text, 'a', (size_t)n);
        size_t k = 0;
        for (int q = 0; q < n / 4; q++)
            k += (size_t)sprintf(want + k, "%saaaa", q ? "|" : "");
        if (n % 4 >= 2)
            k += (size_t)sprintf(want + k, "|aa");
        if (n % 2)
            k += (size_t)sprintf(want + k, "|a");
        const char *got = encoded(&v, e, text, (size_t)n);
        CHECK(!strcmp(got, want), "%d a's -> %.60s...", n, got);
    }
    /* threaded and chunked: cut points only between "x\ny", any chunk size, any thread count */
    char text[4000];
    size_t n = 0;
    const char *bits[] = {"abc\n", "aa  \n", "b\n\nc", " aaa\n",     "\xff\n", "x\ny",
                          "\n",    "  ",     "ab",     "\xc3\xa9\n", "a\r\n",  "bc"};
    unsigned seed = 7;
    while (n < sizeof text - 8) {
        seed = seed * 1103515245u + 12345u;
        const char *b = bits[(seed >> 16) % (sizeof bits / sizeof *bits)];
        memcpy(text + n, b, strlen(b));
        n += strlen(b);
    }
    bpe_ids whole = {0};
    st = bpe_encode(e, (const uint8_t *)text, n, &whole, &err);
    CHECK(!st, "whole: %s", err.msg);
    bpe_doc docs[2] = {{(const uint8_t *)text, n}, {(const uint8_t *)text, 100}};
    for (size_t chunk = 1; chunk <= 64; chunk = chunk * 2 + 1)
        for (int threads = 1; threads <= 3; threads++) {
            bpe_ids ids = {0};
            size_t start[3];
            st = bpe_encode_docs(&v, docs, 2, threads, 7, chunk, &ids, start, NULL, NULL, &err);
            CHECK(!st, "docs: %s", err.msg);
            bool same = !st && start[0] == 0 && ids.id[0] == 7 && start[1] == whole.n + 1 &&
                        !memcmp(ids.id + 1, whole.id, whole.n * sizeof *whole.id) &&
                        ids.id[start[1]] == 7;
            CHECK(same, "chunks of %zu bytes on %d threads differ from one encoder", chunk,
                  threads);
            bpe_ids_free(&ids);
        }
    bpe_ids_free(&whole);
    bpe_encoder_destroy(e);
    bpe_vocab_free(&v);
}

int main(void)
{
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    test_pieces();
    test_pieces_llama3();
    test_nfc();
    test_utf8();
    test_classes();
    test_merges();
    char path[128];
    snprintf(path, sizeof path, "%s/encoder.json", dir);
    unlink(path);
    snprintf(path, sizeof path, "%s/vocab.bpe", dir);
    unlink(path);
    rmdir(dir);
    return check_summary();
}
