// wick.Llama (load, forward, generate as an iterator of text pieces), wick.Tokenizer and
// wick.GgufWriter (to write small models, e.g. in tests).
#include <nanobind/stl/map.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <algorithm>
#include <limits>
#include <map>
#include <span>

#include "wick/gguf.h"
#include "wick/llama.h"
#include "wick/quantized.h"
#include "wick/tokenizer.h"
#include "wick_py.h"

namespace wick::py {

namespace {

// The model and what generation needs from its file; shared by the Llama object and its
// generators.
struct LlamaState {
  LlamaModel model;
  Tokenizer tokenizer;
  bool adds_bos;
  // Where token-by-token generation would have left the cache while a generator's greedy chunk
  // runs ahead of it (-1: nowhere ahead); settle() cuts the cache back to it.
  int64_t fed = -1;
};

// Drops the positions a greedy chunk ran ahead of its generator's last token (an iterator left
// before its chunk was used up), before anything else reads or extends the cache.
void settle(LlamaState& s) {
  if (s.fed >= 0 && s.model.position() > s.fed) s.model.truncate(s.fed);
  s.fed = -1;
}

struct Llama {
  std::shared_ptr<LlamaState> s;
};

// generate(): one forward pass and one sampled token per step, text out as soon as it is whole
// (TokenStreamer), until max_new tokens, a stop token or a full context. The sampler and the
// stream follow wick::generate and the CLI's `wick generate`, so the text is the CLI's. Plain
// greedy picks come as wick::generate takes them: LlamaModel::decode_greedy's chunks (a GPU that
// replays: one wait a chunk), handed out one at a time; the cache is cut back to where
// token-by-token decoding would be when generation stops inside a chunk.
class Generation {
 public:
  Generation(std::shared_ptr<LlamaState> s, std::vector<uint32_t> prompt, int64_t max_new,
             SamplingOptions opts, std::vector<int32_t> stops)
      : s_(std::move(s)),
        prompt_(std::move(prompt)),
        max_new_(max_new),
        sampler_(opts),
        stream_(s_->tokenizer, /*skip_special=*/true),
        stops_(std::move(stops)) {
    done_ = max_new_ <= 0;
  }

  nb::str next() {
    std::string piece;
    {
      nb::gil_scoped_release release;
      while (piece.empty() && !done_) piece = step();
      if (done_ && !flushed_) {
        piece += stream_.finish();
        flushed_ = true;
      }
    }
    if (piece.empty()) throw nb::stop_iteration();
    return nb::str(piece.data(), piece.size());
  }

  std::vector<uint32_t> tokens() const { return tokens_; }
  bool stopped_at_eos() const { return stopped_at_eos_; }
  bool stopped_at_context_end() const { return stopped_at_context_end_; }

 private:
  std::string step() {
    LlamaModel& model = s_->model;
    uint32_t tok;
    if (tokens_.empty()) {
      settle(*s_);
      for (const uint32_t t : prompt_) sampler_.accept(t);
      tok = sampler_.sample(model.forward(prompt_));
      chunked_ = sampler_.plain_greedy() && model.decode_chunk() > 1;
      fed_ = model.position();
    } else {
      if (fed_ >= model.max_seq()) {
        stopped_at_context_end_ = true;
        finish();
        return {};
      }
      if (!chunked_) {
        tok = sampler_.sample(model.forward({tokens_.back()}));
      } else {
        // The cache cut back under the chunk (settle(): a forward or a generate meanwhile): its
        // other picks' rows are gone, so the next chunk starts from the last pick handed out.
        if (model.position() != chunk_end_) next_ = ahead_.size();
        if (next_ == ahead_.size()) {  // the cache is at fed_ again: the next chunk
          const int64_t n =
              std::min({model.decode_chunk(), max_new_ - static_cast<int64_t>(tokens_.size()),
                        model.max_seq() - model.position()});
          ahead_ = model.decode_greedy(tokens_.back(), n);
          next_ = 0;
          chunk_end_ = model.position();
        }
        tok = ahead_[next_++];
      }
      fed_++;  // the pick before this one has been fed
      s_->fed = fed_;
    }
    sampler_.accept(tok);
    tokens_.push_back(tok);
    if (static_cast<int64_t>(tokens_.size()) == max_new_) finish();
    if (std::find(stops_.begin(), stops_.end(), static_cast<int32_t>(tok)) != stops_.end()) {
      stopped_at_eos_ = true;
      finish();
      return {};
    }
    return stream_.push(static_cast<int32_t>(tok));
  }

  void finish() {
    done_ = true;
    settle(*s_);
  }

  std::shared_ptr<LlamaState> s_;
  std::vector<uint32_t> prompt_;
  int64_t max_new_;
  Sampler sampler_;
  TokenStreamer stream_;
  std::vector<int32_t> stops_;
  std::vector<uint32_t> tokens_;
  bool done_ = false, flushed_ = false, stopped_at_eos_ = false, stopped_at_context_end_ = false;
  // Greedy chunks: whether picks come from them, the picks not handed out yet, and the position
  // token-by-token decoding would be at.
  bool chunked_ = false;
  std::vector<uint32_t> ahead_;
  size_t next_ = 0;
  int64_t fed_ = 0, chunk_end_ = 0;  // chunk_end_: the cache's position after the chunk
};

std::vector<uint32_t> prompt_ids(const LlamaState& s, nb::handle prompt, bool allow_special) {
  std::vector<uint32_t> ids;
  if (nb::isinstance<nb::str>(prompt)) {
    if (s.adds_bos && s.tokenizer.bos_id() >= 0)
      ids.push_back(static_cast<uint32_t>(s.tokenizer.bos_id()));
    for (int32_t id : s.tokenizer.encode(nb::cast<std::string>(prompt), allow_special))
      ids.push_back(static_cast<uint32_t>(id));
  } else {
    for (int64_t id : nb::cast<std::vector<int64_t>>(prompt)) {
      if (id < 0 || id > std::numeric_limits<uint32_t>::max())
        fail(ErrorKind::OutOfRange, "generate", "token id ", id, " is negative or too large");
      ids.push_back(static_cast<uint32_t>(id));
    }
  }
  if (ids.empty()) fail(ErrorKind::Shape, "generate", "the prompt encodes to no tokens");
  return ids;
}

GgufValue gguf_value(nb::handle v, const std::string& key) {
  if (PyBool_Check(v.ptr())) return GgufValue(v.ptr() == Py_True);
  if (PyLong_Check(v.ptr())) {
    const int64_t i = nb::cast<int64_t>(v);
    if (i >= 0 && i <= std::numeric_limits<uint32_t>::max())
      return GgufValue(static_cast<uint32_t>(i));
    return GgufValue(i);
  }
  if (PyFloat_Check(v.ptr())) return GgufValue(static_cast<float>(nb::cast<double>(v)));
  if (nb::isinstance<nb::str>(v)) return GgufValue(nb::cast<std::string>(v));
  if (PyList_Check(v.ptr()) || PyTuple_Check(v.ptr())) {
    nb::sequence seq = nb::borrow<nb::sequence>(v);
    bool all_str = true, all_int = true;
    for (nb::handle x : seq) {
      all_str = all_str && nb::isinstance<nb::str>(x);
      all_int = all_int && PyLong_Check(x.ptr()) && !PyBool_Check(x.ptr());
    }
    if (all_str) return GgufValue::array(nb::cast<std::vector<std::string>>(v));
    if (all_int) return GgufValue::array(nb::cast<std::vector<int32_t>>(v));
    return GgufValue::array(nb::cast<std::vector<float>>(v));
  }
  fail(ErrorKind::DType, "GgufWriter.set", "key '", key, "': no GGUF type for a Python ",
       nb::type_name(v.type()).c_str());
}

}  // namespace

void bind_models(nb::module_& m) {
  nb::class_<Tokenizer>(m, "Tokenizer", "Text <-> token ids (BPE, SentencePiece, tokenizer.json).")
      .def_static("from_hf_json_file", &Tokenizer::from_hf_json_file, nb::arg("tokenizer_json"),
                  nb::arg("tokenizer_config_json") = "")
      .def_static(
          "from_hf_json",
          [](const std::string& j, const std::string& cfg) {
            return Tokenizer::from_hf_json(j, cfg);
          },
          nb::arg("tokenizer_json"), nb::arg("tokenizer_config_json") = "")
      .def(
          "encode",
          [](const Tokenizer& t, const std::string& text, bool special) {
            return t.encode(text, special);
          },
          nb::arg("text"), nb::arg("allow_special") = false)
      .def(
          "decode",
          [](const Tokenizer& t, const std::vector<int32_t>& ids, bool skip) {
            return t.decode(ids, skip);
          },
          nb::arg("ids"), nb::arg("skip_special") = false)
      .def_prop_ro("vocab_size", &Tokenizer::vocab_size)
      .def_prop_ro("bos_id", &Tokenizer::bos_id)
      .def_prop_ro("eos_id", &Tokenizer::eos_id)
      .def("token", &Tokenizer::token, nb::arg("id"))
      .def(
          "token_id", [](const Tokenizer& t, const std::string& s) { return t.token_id(s); },
          nb::arg("token"));

  nb::class_<LlamaConfig>(m, "LlamaConfig")
      .def_ro("vocab_size", &LlamaConfig::vocab_size)
      .def_ro("hidden", &LlamaConfig::hidden)
      .def_ro("intermediate", &LlamaConfig::intermediate)
      .def_ro("n_layers", &LlamaConfig::n_layers)
      .def_ro("n_heads", &LlamaConfig::n_heads)
      .def_ro("n_kv_heads", &LlamaConfig::n_kv_heads)
      .def_ro("head_dim", &LlamaConfig::head_dim)
      .def_ro("context_length", &LlamaConfig::context_length)
      .def_ro("rope_theta", &LlamaConfig::rope_theta)
      .def_ro("rms_eps", &LlamaConfig::rms_eps);

  nb::class_<Generation>(m, "Generation", "An iterator of text pieces (see Llama.generate).")
      .def(
          "__iter__", [](nb::handle self) { return self; },
          nb::sig("def __iter__(self) -> Generation"))
      .def("__next__", &Generation::next)
      .def_prop_ro("tokens", &Generation::tokens, "The ids generated so far.")
      .def_prop_ro("stopped_at_eos", &Generation::stopped_at_eos)
      .def_prop_ro("stopped_at_context_end", &Generation::stopped_at_context_end);

  nb::class_<Llama>(m, "Llama",
                    "A llama-family model loaded from a GGUF file or a Hugging Face folder.")
      .def_static(
          "load",
          [](const std::string& path, nb::handle device, int64_t max_seq) {
            const Device dev = device_arg(device);
            nb::gil_scoped_release release;
            LlamaOptions opts;
            opts.max_seq = max_seq;
            LlamaModel model = LlamaModel::load(path, dev, opts);
            Tokenizer tok = load_gguf_tokenizer(model.gguf());
            const bool bos = gguf_adds_bos(model.gguf());
            return Llama{
                std::make_shared<LlamaState>(LlamaState{std::move(model), std::move(tok), bos})};
          },
          nb::arg("path"), nb::arg("device") = nb::none(), nb::arg("max_seq") = 0,
          nb::sig(
              "def load(path: str, device: Device | str | None = None, max_seq: int = 0) -> Llama"),
          "Loads a GGUF file, or a Hugging Face folder (config.json, *.safetensors, "
          "tokenizer.json), onto a device; max_seq bounds the KV cache (0: the model's context, "
          "at most 4096).")
      .def_prop_ro("config", [](const Llama& l) { return l.s->model.config(); })
      .def_prop_ro("tokenizer", [](const Llama& l) { return l.s->tokenizer; })
      .def_prop_ro("device", [](const Llama& l) { return l.s->model.device(); })
      .def_prop_ro("max_seq", [](const Llama& l) { return l.s->model.max_seq(); })
      .def_prop_ro(
          "position",
          [](const Llama& l) {
            const int64_t p = l.s->model.position();  // a greedy chunk may run ahead of it
            return l.s->fed >= 0 ? std::min(p, l.s->fed) : p;
          },
          "Tokens in the KV cache.")
      .def(
          "reset",
          [](Llama& l) {
            l.s->fed = -1;
            l.s->model.reset();
          },
          "Empties the KV cache.")
      .def(
          "forward",
          [](Llama& l, const std::vector<uint32_t>& tokens) {
            nb::gil_scoped_release release;
            settle(*l.s);
            return l.s->model.forward(tokens);
          },
          nb::arg("tokens"),
          "Appends tokens to the KV cache; the last one's logits (f32, [vocab]).")
      .def(
          "forward_all",
          [](Llama& l, const std::vector<uint32_t>& tokens) {
            nb::gil_scoped_release release;
            settle(*l.s);
            return l.s->model.forward_all(tokens);
          },
          nb::arg("tokens"),
          "Appends tokens to the KV cache; every one's logits (f32, [len(tokens), vocab]): row i "
          "predicts the token after tokens[i].")
      .def(
          "apply_chat_template",
          [](const Llama& l, const std::vector<std::pair<std::string, std::string>>& msgs,
             bool add_generation_prompt) {
            std::vector<ChatMessage> cm;
            for (const auto& [role, content] : msgs) cm.push_back({role, content});
            return load_gguf_chat_template(l.s->model.gguf()).apply(cm, add_generation_prompt);
          },
          nb::arg("messages"), nb::arg("add_generation_prompt") = true,
          "The model's chat template over (role, content) pairs.")
      .def(
          "generate",
          [](Llama& l, nb::handle prompt, int64_t max_new_tokens, double temperature, int64_t top_k,
             double top_p, double min_p, double repeat_penalty, int64_t repeat_last_n,
             double frequency_penalty, double presence_penalty,
             std::optional<std::map<uint32_t, double>> logit_bias, uint64_t seed,
             bool allow_special, bool reset, std::optional<std::vector<int32_t>> stop_tokens) {
            if (reset) {  // else the generator's first step settles the cache
              l.s->fed = -1;
              l.s->model.reset();
            }
            SamplingOptions o;
            o.temperature = temperature;
            o.top_k = top_k;
            o.top_p = top_p;
            o.min_p = min_p;
            o.repeat_penalty = repeat_penalty;
            o.repeat_last_n = repeat_last_n;
            o.frequency_penalty = frequency_penalty;
            o.presence_penalty = presence_penalty;
            if (logit_bias) o.logit_bias.assign(logit_bias->begin(), logit_bias->end());
            o.seed = seed;
            std::vector<int32_t> stops =
                stop_tokens ? *stop_tokens : std::vector<int32_t>{l.s->tokenizer.eos_id()};
            return Generation(l.s, prompt_ids(*l.s, prompt, allow_special), max_new_tokens, o,
                              std::move(stops));
          },
          nb::arg("prompt"), nb::arg("max_new_tokens") = 128, nb::arg("temperature") = 0.0,
          nb::arg("top_k") = 0, nb::arg("top_p") = 1.0, nb::arg("min_p") = 0.0,
          nb::arg("repeat_penalty") = 1.0, nb::arg("repeat_last_n") = 64,
          nb::arg("frequency_penalty") = 0.0, nb::arg("presence_penalty") = 0.0,
          nb::arg("logit_bias") = nb::none(), nb::arg("seed") = SamplingOptions{}.seed,
          nb::arg("allow_special") = false, nb::arg("reset") = true,
          nb::arg("stop_tokens") = nb::none(), nb::keep_alive<0, 1>(),
          nb::sig(
              "def generate(self, prompt: str | collections.abc.Sequence[int], max_new_tokens: int "
              "= 128, "
              "temperature: float = 0.0, top_k: int = 0, top_p: float = 1.0, min_p: float = 0.0, "
              "repeat_penalty: float = 1.0, repeat_last_n: int = 64, "
              "frequency_penalty: float = 0.0, presence_penalty: float = 0.0, "
              "logit_bias: collections.abc.Mapping[int, float] | None = None, "
              "seed: int = 299792458, "
              "allow_special: bool = False, reset: bool = True, "
              "stop_tokens: collections.abc.Sequence[int] | None = None) -> Generation"),
          "An iterator of text pieces: the prompt (text, or token ids) is fed, then up to "
          "max_new_tokens are sampled (temperature 0: greedy), stopping at a stop token (default: "
          "eos; [] for none) or a full context. reset=False continues from the KV cache. Greedy "
          "picks "
          "on a GPU that replays come in chunks of decode steps run on the device (the same "
          "tokens).");

  nb::class_<GgufWriter>(m, "GgufWriter", "Builds a GGUF file (metadata and tensors).")
      .def(nb::init<uint32_t>(), nb::arg("alignment") = 32)
      .def(
          "set",
          [](GgufWriter& w, const std::string& key, nb::handle v) {
            w.set(key, gguf_value(v, key));
          },
          nb::arg("key"), nb::arg("value"),
          nb::sig("def set(self, key: str, value: bool | int | float | str | "
                  "collections.abc.Sequence[str] | collections.abc.Sequence[int] | "
                  "collections.abc.Sequence[float]) -> None"),
          "bool, int (u32, or i64 outside u32), float (f32), str, or a list of str/int (i32)/float "
          "(f32).")
      .def(
          "add_tensor",
          [](GgufWriter& w, const std::string& name, const Tensor& t,
             std::optional<std::string> type) {
            if (!type) return w.add_tensor(name, t);
            const QuantTypeInfo* info = quant_type_named(*type);
            if (!info)
              fail(ErrorKind::DType, "GgufWriter.add_tensor", "unknown tensor type \"", *type,
                   "\" for ", name);
            if (info->block_elems == 1) {  // a plain type: the tensor in that dtype
              w.add_tensor(name, t.to_dtype(parse_dtype(*type)));
              return;
            }
            const QTensor q = quantize(t, info->type);
            w.add_raw_tensor(name, info->type, q.shape(),
                             std::as_bytes(std::span(q.data(), q.nbytes())));
          },
          nb::arg("name"), nb::arg("tensor"), nb::arg("type") = nb::none(),
          "A tensor, as it is or (type: a GGML type name such as \"q8_0\" or \"f16\") quantized or "
          "converted to that type first.")
      .def("write", &GgufWriter::write, nb::arg("path"));
}

}  // namespace wick::py
