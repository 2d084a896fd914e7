// Version and the environment knobs. Each knob is read once, on first use, and printed by
// `wick info`.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace wick {

const char* version();

struct Knobs {
  // WICK_COMPUTE_PER_BUFFER: ops recorded per GPU command buffer before a commit. Unset or
  // unparsable -> -1 (the backend's measured default); 0 -> commit at every op.
  int64_t compute_per_buffer = -1;
  // WICK_FAST_MATH: 0/false/off disables; default on. Part of every kernel cache key.
  bool fast_math = true;
  // WICK_REPLAY: 0/false/off makes the llama model record every decode step op by op instead of
  // replaying one captured step (GPUs); default on.
  bool replay = true;
  // WICK_DECODE_CHUNK: n makes LlamaModel::decode_greedy replay n captured decode steps at once on
  // GPUs, the token fed back on the device (the host waits once per n tokens); 1/0/off: one step
  // a submission. Default 8; unparsable -> the default.
  int64_t decode_chunk = 8;
  // WICK_PROMPT_ROWS: n makes LlamaModel::forward_batch run prompts of up to n tokens as rows of
  // one token each beside the answers' tokens, in one rope_kv and one attention a layer (the
  // pass's op count then does not grow with its prompts); longer prompts, or 0/off, take the
  // prompt path (attention over each prompt). Default 64; unparsable -> the default.
  int64_t prompt_rows = 64;
  // WICK_KERNEL_CACHE: folder of the on-disk kernel cache; "off" disables; empty -> default.
  std::string kernel_cache;
  // WICK_POOL_LIMIT: bytes (suffixes K, M, G) of unused pooled GPU memory kept; 0 -> default.
  uint64_t pool_limit = 0;
  // WICK_QMATVEC_ROWS: x rows up to which a GPU's quantized matmul uses its matrix-vector kernel
  // (longer x: the tiled one). Unset or unparsable -> -1 (the backend's measured default).
  int64_t qmatvec_rows = -1;
  // WICK_QMATVEC_SHAPE: "threads,rows": threads and output rows per workgroup of a GPU's quantized
  // matrix-vector kernel, for tuning (threads 32..256, a multiple of 32; rows 1..8,
  // threads x rows <= 1024), for every matrix; "threads,rows,wide_threads,wide_rows": the second
  // pair for matrices with many output rows (an lm_head; the backend's threshold), the first for
  // the rest; a third pair, "...,mid_threads,mid_rows", for matrices between the backend's mid
  // and wide thresholds (a feed-forward gate/up). Unset or invalid -> 0 (the backend's defaults).
  int64_t qmatvec_threads = 0, qmatvec_rows_per_group = 0;
  int64_t qmatvec_wide_threads = 0, qmatvec_wide_rows = 0;
  int64_t qmatvec_mid_threads = 0, qmatvec_mid_rows = 0;
  // WICK_QMATMUL_F16: x rows from which a GPU's quantized matmul dequantizes W to f16 and runs the
  // float GEMM (tensor cores). Unset or unparsable -> -1 (the backend's default: only where matmul
  // has tensor cores); 0/off -> never; "on" -> -2 (the default row count, on any device); n > 0 ->
  // from n rows on any device.
  int64_t qmatmul_f16_rows = -1;
  // WICK_QMATVEC_FUSE: 0/false/off makes a GPU's quantized matrix-vector kernel always read x
  // quantized by a kernel before it (two dispatches); "R,K": it quantizes x itself for up to R x
  // rows of at most K elements (matrices of the wide shape excepted); anything else: for every
  // row count and matrix that fits. Unset -> -1: the device's default
  // (gpu::default_qmatvec_fuse_rows and _max_k; docs/architecture.md).
  int64_t qmatvec_fuse_rows = -1;
  int64_t qmatvec_fuse_max_k = -1;  // with R,K: K; with "on": -2 (any k, wide matrices too)
  // WICK_QMATVEC_STAGE: n makes a GPU's quantized matrix-vector kernel copy its x rows (quantized
  // by a kernel before it) into shared memory before its dot loop from n x rows on; on: from 2;
  // 0/false/off: never. Unset -> -1: the device's default (CUDA from 2 rows, Vulkan never: as
  // measured on the H200; gpu::default_qmatvec_stage_rows, CudaOptions::from_knobs).
  int64_t qmatvec_stage_rows = -1;
  // WICK_QMATVEC_MMA: n makes a GPU's quantized matrix-vector kernel multiply on the tensor cores
  // (8-bit MMA: CUDA from sm_80) from n x rows on, for the 32-element formats; "n,threads" also
  // sets its workgroup (32, 64, 128, 256 or 512 threads; 128 unset); on: from 2; 0/false/off:
  // never. Unset or unparsable -> -1: the device's default (CudaOptions::from_knobs).
  int64_t qmatvec_mma_rows = -1, qmatvec_mma_threads = 0;
  // WICK_QMATVEC_ROPE: 0/false/off makes a GPU's decode q/k/v projection store its product and
  // run rope_kv_cache after it (two dispatches) instead of rotating and writing the caches from
  // the product's kernel (QMatMul::forward_rope_kv; the same bits). Default on; for measuring.
  bool qmatvec_rope = true;
  // WICK_QMATVEC_ARGMAX: 1/true/on makes a GPU's greedy pick (QMatMul::forward_argmax: the
  // lm_head's product and its argmax) fold the maxima in the product's kernel; 0/false/off
  // stores the logits and runs argmax after them (the same picks). Unset -> -1: the device's
  // default (Vulkan on; CUDA off, CudaOptions::from_knobs: as measured on the H100).
  int qmatvec_argmax = -1;
  // WICK_QMATVEC_SWIGLU: 1/true/on makes a GPU's decode feed-forward block
  // (QMatMul::forward_swiglu_ffn) finish silu(gate) * up and its 8-bit quantization in the gate/up
  // product's kernel (two dispatches instead of three; the same bits) for every count of x rows;
  // 0/false/off runs qact for it. Unset -> -1: the device's default (Vulkan for 1 or 2 x rows,
  // gpu::default_qmatvec_swiglu_rows; CUDA never: CudaOptions::from_knobs).
  int qmatvec_swiglu = -1;
  // WICK_ATTENTION_BLOCK: a GPU's attention_cached workgroup size for one query an item (decode),
  // which is also the keys each step of a split scores (32, 64, 128 or 256; prompts take 128);
  // for tuning. Unset or invalid -> 0: the device's default (Vulkan GPUs 256, CUDA and CPU
  // implementations 128).
  int64_t attention_block = 0;
  // WICK_CUDA_PDL: 0/false/off launches CUDA kernels without programmatic dependent launch
  // (each starts only when the previous one has ended); default on where the GPU has it (sm_90).
  bool cuda_dependent_launch = true;
  // WICK_VK_PROFILE: 1/on makes Vulkan write a GPU timestamp after every dispatch and print, when
  // the device goes, each kernel's share of GPU time (from the end of the dispatch before it to
  // its own end: barrier, launch and run). For finding where a step's time goes; default off.
  bool vk_profile = false;
  // WICK_VK_INT_DOT: 0/false/off makes Vulkan's quantized matrix-vector kernel multiply its 8-bit
  // integers one by one instead of four at a time in packed dot products (SPV_KHR_integer_dot_
  // product; the same bits); for measuring. Default on where the device has them.
  bool vk_int_dot = true;
  // WICK_VK_QUEUE: "universal" makes Vulkan submit to a queue family that also does graphics
  // (where the device has one) instead of a compute-only family; for measuring. Default: compute.
  bool vk_universal_queue = false;
  // WICK_VK_COOP_SHAPE: "tile,threads" of Vulkan's cooperative-matrix f16 GEMM (tile 64 or 128,
  // threads 128 or 256) for every product, for tuning. Unset or invalid -> 0 (chosen by shape).
  int64_t vk_coop_tile = 0, vk_coop_threads = 0;
  // The settings above that were not understood, "NAME=value (it takes ...)": each keeps its
  // default, and knobs() prints them on stderr once ("wick: ignoring ...").
  std::vector<std::string> ignored;
  // WICK_DEVICE: default device of the CLI ("cpu", "vulkan[:N]", "cuda[:N]"); empty -> cpu.
  std::string device;
};

const Knobs& knobs();

// name = value lines describing every knob and its current value (for `wick info`).
std::vector<std::pair<std::string, std::string>> describe_knobs();

}  // namespace wick
