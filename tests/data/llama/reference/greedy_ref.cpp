// greedy_ref: pure-argmax greedy decoding with llama.cpp, printing token ids as JSON.
// usage: greedy_ref MODEL N_THREADS N_GEN CASES_FILE [--bench N_REPEATS]
// env GREEDY_REF_DUMP_LOGITS=FILE: write the first case's post-prompt logits (n_vocab float32, little-endian)
// CASES_FILE: one case per line: "<add_bos 0|1|m> <parse_special 0|1> <prompt with \n escapes>"
// Written for the wick project as an independent reference. No sampler chain is used.
#include "llama.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

static std::string unescape(const std::string & s) {
    std::string o;
    for (size_t i = 0; i < s.size(); ++i) {
        if (s[i] == '\\' && i + 1 < s.size()) {
            char c = s[++i];
            o += c == 'n' ? '\n' : c == 't' ? '\t' : c;
        } else {
            o += s[i];
        }
    }
    return o;
}

static std::string json_str(const std::string & s) {
    std::string o = "\"";
    for (unsigned char c : s) {
        switch (c) {
            case '"':  o += "\\\""; break;
            case '\\': o += "\\\\"; break;
            case '\n': o += "\\n";  break;
            case '\r': o += "\\r";  break;
            case '\t': o += "\\t";  break;
            default:
                if (c < 0x20) { char b[8]; snprintf(b, sizeof b, "\\u%04x", c); o += b; }
                else o += (char) c;
        }
    }
    return o + "\"";
}

static std::string piece(const llama_vocab * v, llama_token t) {
    char buf[256];
    int n = llama_token_to_piece(v, t, buf, sizeof buf, 0, /*special=*/true);
    return n < 0 ? std::string() : std::string(buf, n);
}

static llama_token argmax(const float * l, int n) {
    int best = 0;
    for (int i = 1; i < n; ++i) if (l[i] > l[best]) best = i;  // ties -> lowest id
    return best;
}

static void silent_log(ggml_log_level, const char *, void *) {}

int main(int argc, char ** argv) {
    if (argc < 5) { fprintf(stderr, "usage: %s MODEL THREADS NGEN CASES [--bench R]\n", argv[0]); return 1; }
    const char * model_path = argv[1];
    const int n_threads = atoi(argv[2]);
    const int n_gen = atoi(argv[3]);
    int bench_reps = 0;
    if (argc >= 7 && strcmp(argv[5], "--bench") == 0) bench_reps = atoi(argv[6]);

    llama_log_set(silent_log, nullptr);
    llama_backend_init();
    llama_model_params mp = llama_model_default_params();
    mp.n_gpu_layers = 0;
    llama_model * model = llama_model_load_from_file(model_path, mp);
    if (!model) { fprintf(stderr, "load failed\n"); return 1; }
    const llama_vocab * vocab = llama_model_get_vocab(model);
    const int n_vocab = llama_vocab_n_tokens(vocab);
    const bool meta_add_bos = llama_vocab_get_add_bos(vocab);

    std::ifstream in(argv[4]);
    std::string line;
    printf("{\"n_vocab\": %d, \"metadata_add_bos\": %s, \"bos_id\": %d, \"eos_id\": %d, \"n_threads\": %d, \"cases\": [\n",
           n_vocab, meta_add_bos ? "true" : "false", llama_vocab_bos(vocab), llama_vocab_eos(vocab), n_threads);
    bool first = true;
    while (std::getline(in, line)) {
        if (line.size() < 4) continue;
        const bool add_bos = line[0] == 'm' ? meta_add_bos : line[0] == '1';  // 'm' = follow GGUF metadata
        const bool parse_special = line[2] == '1';
        const std::string prompt = unescape(line.substr(4));

        std::vector<llama_token> toks(prompt.size() + 8);
        int n = llama_tokenize(vocab, prompt.c_str(), (int32_t) prompt.size(), toks.data(), (int32_t) toks.size(),
                               add_bos, parse_special);
        if (n < 0) { fprintf(stderr, "tokenize failed\n"); return 1; }
        toks.resize(n);

        llama_context_params cp = llama_context_default_params();
        cp.n_ctx = 512;
        cp.n_batch = 512;
        cp.n_threads = n_threads;
        cp.n_threads_batch = n_threads;
        llama_context * ctx = llama_init_from_model(model, cp);

        std::vector<llama_token> prompt_copy = toks;
        auto t0 = std::chrono::steady_clock::now();
        if (llama_decode(ctx, llama_batch_get_one(prompt_copy.data(), (int32_t) prompt_copy.size())) != 0) {
            fprintf(stderr, "decode failed\n"); return 1;
        }
        auto t1 = std::chrono::steady_clock::now();
        const float * logits = llama_get_logits_ith(ctx, -1);
        std::vector<int> order(n_vocab);
        for (int i = 0; i < n_vocab; ++i) order[i] = i;
        std::partial_sort(order.begin(), order.begin() + 5, order.end(),
                          [&](int a, int b) { return logits[a] > logits[b] || (logits[a] == logits[b] && a < b); });
        std::string top5 = "[";
        for (int k = 0; k < 5; ++k) {
            char b[96];
            snprintf(b, sizeof b, "%s[%d, %.6f]", k ? ", " : "", order[k], logits[order[k]]);
            top5 += b;
        }
        top5 += "]";
        if (first && getenv("GREEDY_REF_DUMP_LOGITS")) {  // raw float32 logits after the first case's prompt
            FILE * f = fopen(getenv("GREEDY_REF_DUMP_LOGITS"), "wb");
            if (f) { fwrite(logits, sizeof(float), n_vocab, f); fclose(f); }
        }

        std::vector<llama_token> gen;
        llama_token cur = argmax(logits, n_vocab);
        double decode_s = 0;
        for (int i = 0; i < n_gen; ++i) {
            gen.push_back(cur);
            if (i + 1 == n_gen) break;
            auto a = std::chrono::steady_clock::now();
            if (llama_decode(ctx, llama_batch_get_one(&cur, 1)) != 0) { fprintf(stderr, "decode failed\n"); return 1; }
            decode_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - a).count();
            cur = argmax(llama_get_logits_ith(ctx, -1), n_vocab);
        }
        std::string text;
        for (auto t : gen) text += piece(vocab, t);

        auto ids = [](const std::vector<llama_token> & v) {
            std::string s = "[";
            for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
            return s + "]";
        };
        printf("%s{\"prompt\": %s, \"add_bos\": %s, \"parse_special\": %s, \"prompt_ids\": %s, \"generated_ids\": %s, "
               "\"generated_text\": %s, \"top5_after_prompt\": %s, \"prefill_s\": %.6f, \"decode_s_%d_tokens\": %.6f}",
               first ? "" : ",\n", json_str(prompt).c_str(), add_bos ? "true" : "false",
               parse_special ? "true" : "false", ids(toks).c_str(), ids(gen).c_str(), json_str(text).c_str(),
               top5.c_str(), std::chrono::duration<double>(t1 - t0).count(), n_gen - 1, decode_s);
        first = false;

        // optional timing: repeat "prefill prompt + decode n_gen tokens" from a cleared cache
        for (int r = 0; r < bench_reps; ++r) {
            llama_memory_clear(llama_get_memory(ctx), true);
            prompt_copy = toks;
            auto a = std::chrono::steady_clock::now();
            llama_decode(ctx, llama_batch_get_one(prompt_copy.data(), (int32_t) prompt_copy.size()));
            auto b = std::chrono::steady_clock::now();
            llama_token c = argmax(llama_get_logits_ith(ctx, -1), n_vocab);
            for (int i = 0; i < n_gen; ++i) {
                llama_decode(ctx, llama_batch_get_one(&c, 1));
                c = argmax(llama_get_logits_ith(ctx, -1), n_vocab);
            }
            auto e = std::chrono::steady_clock::now();
            fprintf(stderr, "bench rep %d: prefill %d tok %.2f tok/s, decode %d tok %.2f tok/s\n", r, (int) toks.size(),
                    toks.size() / std::chrono::duration<double>(b - a).count(), n_gen,
                    n_gen / std::chrono::duration<double>(e - b).count());
        }
        llama_free(ctx);
    }
    printf("\n]}\n");
    llama_model_free(model);
    llama_backend_free();
    return 0;
}
