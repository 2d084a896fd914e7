// Tokenizer throughput: encode MB/s of English-like text on one thread, for a byte-level BPE
// vocabulary (llama.cpp's pre-tokenizer regexes through PCRE2) and a SentencePiece one, against
// the goal of 10 MB/s per core. The vocabularies are llama.cpp's vocab-only GGUF files, which
// scripts/install-deps.sh puts in .cache/llama-vocab/ (WICK_LLAMA_VOCAB_DIR overrides).
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <random>

#include "bench.h"
#include "io/file.h"
#include "report.h"
#include "wick/gguf.h"
#include "wick/llama.h"
#include "wick/tokenizer.h"
#include "wick/wick.h"

namespace wick::cli {
namespace {

constexpr double kGoalMBps = 10.0;

// Deterministic English-like prose: common words in Zipf-ish proportions, sentences with commas,
// contractions, numbers and paragraphs. Natural text repeats its words as this does, which the
// tokenizer's per-call piece cache relies on.
std::string english_text(size_t bytes) {
  static const char* kWords[] = {
      "the",      "of",      "and",      "to",      "a",        "in",       "is",      "it",
      "you",      "that",    "he",       "was",     "for",      "on",       "are",     "with",
      "as",       "I",       "his",      "they",    "be",       "at",       "one",     "have",
      "this",     "from",    "or",       "had",     "by",       "not",      "word",    "but",
      "what",     "some",    "we",       "can",     "out",      "other",    "were",    "all",
      "there",    "when",    "up",       "use",     "your",     "how",      "said",    "an",
      "each",     "she",     "which",    "do",      "their",    "time",     "if",      "will",
      "way",      "about",   "many",     "then",    "them",     "write",    "would",   "like",
      "so",       "these",   "her",      "long",    "make",     "thing",    "see",     "him",
      "two",      "has",     "look",     "more",    "day",      "could",    "go",      "come",
      "did",      "number",  "sound",    "no",      "most",     "people",   "my",      "over",
      "know",     "water",   "than",     "call",    "first",    "who",      "may",     "down",
      "side",     "been",    "now",      "find",    "any",      "new",      "work",    "part",
      "take",     "get",     "place",    "made",    "live",     "where",    "after",   "back",
      "little",   "only",    "round",    "man",     "year",     "came",     "show",    "every",
      "good",     "me",      "give",     "our",     "under",    "name",     "very",    "through",
      "just",     "form",    "sentence", "great",   "think",    "say",      "help",    "low",
      "line",     "differ",  "turn",     "cause",   "much",     "mean",     "before",  "move",
      "right",    "boy",     "old",      "too",     "same",     "tell",     "does",    "set",
      "three",    "want",    "air",      "well",    "also",     "play",     "small",   "end",
      "put",      "home",    "read",     "hand",    "port",     "large",    "spell",   "add",
      "even",     "land",    "here",     "must",    "big",      "high",     "such",    "follow",
      "act",      "why",     "ask",      "men",     "change",   "went",     "light",   "kind",
      "off",      "need",    "house",    "picture", "try",      "us",       "again",   "animal",
      "point",    "mother",  "world",    "near",    "build",    "self",     "earth",   "father",
      "head",     "stand",   "own",      "page",    "should",   "country",  "found",   "answer",
      "school",   "grow",    "study",    "still",   "learn",    "plant",    "cover",   "food",
      "sun",      "four",    "between",  "state",   "keep",     "eye",      "never",   "last",
      "let",      "thought", "city",     "tree",    "cross",    "farm",     "hard",    "start",
      "might",    "story",   "saw",      "far",     "sea",      "draw",     "left",    "late",
      "run",      "don't",   "while",    "press",   "close",    "night",    "real",    "life",
      "few",      "north",   "it's",     "book",    "carry",    "took",     "science", "eat",
      "room",     "friend",  "began",    "idea",    "fish",     "mountain", "stop",    "once",
      "base",     "hear",    "horse",    "cut",     "sure",     "watch",    "color",   "face",
      "wood",     "main",    "enough",   "plain",   "girl",     "usual",    "young",   "ready",
      "above",    "ever",    "red",      "list",    "though",   "feel",     "talk",    "bird",
      "soon",     "body",    "dog",      "family",  "direct",   "pose",     "leave",   "song",
      "measure",  "door",    "product",  "black",   "short",    "numeral",  "class",   "wind",
      "question", "happen",  "complete", "ship",    "area",     "half",     "rock",    "order",
      "fire",     "south",   "problem",  "piece",   "told",     "knew",     "pass",    "since",
      "top",      "whole",   "king",     "space",   "heard",    "best",     "hour",    "better",
      "true",     "during",  "hundred",  "five",    "remember", "step",     "early",   "hold",
      "west",     "ground",  "interest", "reach",   "fast",     "verb",     "sing",    "listen",
      "six",      "table",   "travel",   "less",    "morning",  "ten",      "simple",  "several",
      "vowel",    "toward",  "war",      "lay",     "against",  "pattern",  "slow",    "center",
      "love",     "person",  "money",    "serve",
  };
  constexpr size_t n = std::size(kWords);
  std::mt19937_64 gen(12);
  // Zipf-ish: index = n * u^3 favours the common words at the front of the list.
  std::uniform_real_distribution<double> u(0, 1);
  const auto word = [&] {
    return kWords[std::min(n - 1, size_t(double(n) * std::pow(u(gen), 3)))];
  };
  std::string text;
  text.reserve(bytes + 256);
  while (text.size() < bytes) {
    const int sentences = 2 + int(gen() % 6);
    for (int s = 0; s < sentences; ++s) {
      const int words = 4 + int(gen() % 18);
      for (int w = 0; w < words; ++w) {
        std::string wd = word();
        if (w == 0) wd[0] = char(std::toupper(static_cast<unsigned char>(wd[0])));
        if (gen() % 40 == 0) wd = std::to_string(1800 + gen() % 230);
        text += wd;
        if (w + 1 < words) text += gen() % 9 == 0 ? ", " : " ";
      }
      text += gen() % 7 == 0 ? "? " : ". ";
    }
    text += "\n\n";
  }
  text.resize(bytes);
  return text;
}

// FNV-1a over the ids (as bench/llama_tokenize.cpp prints llama.cpp's): the same text gives the
// same hash only for the same ids.
std::string fnv1a_hex(const std::vector<int32_t>& ids) {
  uint64_t h = 1469598103934665603ull;
  for (int32_t id : ids) h = (h ^ static_cast<uint32_t>(id)) * 1099511628211ull;
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

std::filesystem::path vocab_dir() {
  if (const char* env = std::getenv("WICK_LLAMA_VOCAB_DIR"); env && *env) return env;
  return ".cache/llama-vocab";
}

}  // namespace

bool bench_tokenizer(const BenchContext& ctx) {
  print_title(ctx, "tokenizer");
  std::ostream& os = ctx.os();
  const size_t bytes = ctx.quick ? (256u << 10) : (4u << 20);
  const std::string text = english_text(bytes);
  if (!ctx.save_text.empty()) {  // whole or not at all
    io::AtomicFileWriter file(ctx.save_text, "bench tokenizer --save-text");
    file.write(text.data(), text.size());
    file.commit();
    os << "text written to " << ctx.save_text << " (" << text.size() << " bytes)\n";
  }
  const double budget_ms = ctx.quick ? 200 : 3000;
  Table table({"vocabulary", "model", "encode MB/s", "vs goal", "decode MB/s", "bytes/token",
               "first run", "runs", "ids FNV-1a"});
  std::vector<std::string> notes;
  struct Row {
    const char* file;
    const char* label;
  };
  bool ok = true;
  for (const Row& r : {Row{"ggml-vocab-llama-bpe.gguf", "BPE, llama-bpe regex"},
                       Row{"ggml-vocab-gpt-2.gguf", "BPE, gpt-2 regex"},
                       Row{"ggml-vocab-qwen2.gguf", "BPE, qwen2 regex"},
                       Row{"ggml-vocab-llama-spm.gguf", "SentencePiece"}}) {
    const std::filesystem::path path = vocab_dir() / r.file;
    if (!std::filesystem::exists(path)) {
      table.add_row({r.file, r.label, "missing"});
      add_note(notes, path.parent_path().string() +
                          " lacks llama.cpp's vocab files: run scripts/install-deps.sh from the "
                          "repository root, or set WICK_LLAMA_VOCAB_DIR");
      continue;
    }
    const Tokenizer tok = load_gguf_tokenizer(GgufFile::open(path.string()));
    std::vector<int32_t> ids;
    const Timing enc = measure([&] { ids = tok.encode(text); }, 2, 20, budget_ms);
    std::string back;
    const Timing dec = measure([&] { back = tok.decode(ids); }, 2, 20, budget_ms / 4);
    if (back != text) {
      ok = false;
      add_note(notes, std::string(r.file) + ": decode(encode(text)) differs from the text");
    }
    const double mb = double(text.size()) / 1e6;
    const double enc_mbps = mb / (enc.median_ms / 1e3);
    table.add_row({r.file, r.label, fixed(enc_mbps, 1), fixed(enc_mbps / kGoalMBps, 2) + "×",
                   fixed(mb / (dec.median_ms / 1e3), 0),
                   fixed(double(text.size()) / double(ids.size()), 2),
                   fixed(enc.first_ms, 1) + " ms", std::to_string(enc.later_runs), fnv1a_hex(ids)});
  }
  table.print(os);
  os << "\nOne thread; " << fixed(double(bytes) / 1e6, 2)
     << " MB of English-like text (common words, punctuation, numbers, paragraphs), encoded "
        "without special tokens. MB/s = text bytes / median time of the runs after the first; "
        "vs goal: against "
     << fixed(kGoalMBps, 0)
     << " MB/s per core. --save-text writes the text; bench/llama_tokenize.cpp times llama.cpp "
        "on it and prints its ids' hash.\n";
  print_notes(os, notes);
  return ok;
}

}  // namespace wick::cli
