// `wick generate`: text generation with a llama-family GGUF model.
#pragma once

#include <string>
#include <vector>

#include "args.h"
#include "wick/llama.h"

namespace wick::cli {

// Streams the continuation of args.prompt to stdout, statistics to stderr; the exit status.
int run_generate(const Args& args);

// `wick chat`: a conversation read from stdin, line by line; the exit status.
int run_chat(const Args& args);

// The tokens that end a chat turn: the model's eos and end-of-turn tokens (GGUF
// tokenizer.ggml.eot_token_id, and the control tokens <|im_end|>, <|eot_id|>, <end_of_turn>,
// <|end|> where the vocabulary has them).
std::vector<int32_t> end_of_turn_ids(const Tokenizer& tok, const GgufFile& f);

// `wick perplexity`: llama.cpp's perplexity of a model over a text file; the exit status.
int run_perplexity(const Args& args);

// The bytes of a --file (an Io error if it cannot be read, a UsageError if it is empty).
std::string read_text_file(const std::string& path, const char* command);

// The sampler options of the command line (--temp, --top-k, ...).
SamplingOptions sampling_options(const Args& args);

// Loads a model, drawing a progress bar on stderr, when it is a terminal, once loading has taken
// longer than a moment.
// A context the model or the machine cannot hold (Error(OutOfRange) from the loader) becomes a
// UsageError naming `max_seq_flags`, the options that set max_seq.
// The option that set the context of generate and chat, for messages: "--ctx N" or its default.
std::string ctx_flag_text(const Args& args);

LlamaModel load_model_with_progress(const std::string& path, const Device& dev, int64_t max_seq,
                                    const std::string& max_seq_flags, double* seconds,
                                    KvCacheType kv_type = KvCacheType::F16);

}  // namespace wick::cli
