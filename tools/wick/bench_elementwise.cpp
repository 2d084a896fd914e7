// Memory-bound ops against memcpy of the same bytes (elementwise), and the fixed cost of one op
// on a 1-element tensor (overhead).
#include <cstdlib>
#include <cstring>
#include <functional>

#include "bench.h"
#include "report.h"
#include "wick/wick.h"

namespace wick::cli {

namespace {

double gbps(double bytes, double ms) {
  return bytes / (ms * 1e6);
}

std::string size_label(int64_t n) {
  if (n % (1 << 20) == 0) return std::to_string(n >> 20) + "M";
  if (n % (1 << 10) == 0) return std::to_string(n >> 10) + "K";
  return std::to_string(n);
}

}  // namespace

bool bench_elementwise(const BenchContext& ctx) {
  print_title(ctx, "elementwise");
  const Device dev = ctx.device();
  std::ostream& os = ctx.os();
  const std::vector<int64_t> sizes = ctx.quick ? std::vector<int64_t>{1 << 16, 1 << 12}
                                               : std::vector<int64_t>{1 << 24, 1 << 20, 1 << 16};
  const double budget_ms = ctx.quick ? 5 : 300;
  std::vector<std::string> notes;
  const bool gpu = !dev.is_cpu();
  // GPUs are timed against their own copy engine (a device-to-device copy of the same bytes,
  // wick's contiguous copy(): one driver copy) after warming their clocks; the CPU against
  // memcpy.
  const char* anchor = gpu ? "device copy GB/s" : "memcpy GB/s";
  const double warm_ms = gpu && !ctx.quick ? 300 : 0;
  Table table({"op", "f32 elements", "MB moved", "wick first run", "wick median", "wick GB/s",
               anchor, std::string("wick / ") + (gpu ? "copy" : "memcpy"),
               gpu ? "" : "memcpy to a new buffer GB/s"});
  for (int64_t n : sizes) {
    const size_t un = static_cast<size_t>(n);
    std::vector<float> src(random_floats(un, 5)), dst(un, 0.0f);
    const Tensor x = Tensor::from_vec(src, {n}, dev);
    const Tensor y = Tensor::from_vec(random_floats(un, 6), {n}, dev);
    double anchor_gbps = 0;
    std::string memcpy_new_gbps;
    if (gpu) {
      const Timing cp = measure(
          [&] {
            const Tensor c = x.copy();
            dev.synchronize();
          },
          5, 20, budget_ms, warm_ms);
      anchor_gbps = gbps(8.0 * n, cp.median_ms);
    } else {
      // The anchor: one memcpy of the same n floats (read + write), into memory already touched.
      const Timing mc =
          measure([&] { std::memcpy(dst.data(), src.data(), un * 4); }, 5, 20, budget_ms);
      anchor_gbps = gbps(8.0 * n, mc.median_ms);
      // The same into a buffer allocated for it, as wick's ops allocate their outputs: for large
      // blocks that is fresh pages from the kernel, faulted in on first write.
      const Timing mc_new = measure(
          [&] {
            void* fresh = std::malloc(un * 4);
            std::memcpy(fresh, src.data(), un * 4);
            asm volatile("" : : "r"(fresh) : "memory");  // keep the copy
            std::free(fresh);
          },
          5, 20, budget_ms);
      memcpy_new_gbps = fixed(gbps(8.0 * n, mc_new.median_ms), 1);
    }
    const Tensor rows = x.reshape({n / 1024, 1024});
    dev.synchronize();
    struct Op {
      const char* name;
      double bytes;  // reads + writes of the op's operands
      std::function<Tensor()> run;
    };
    const std::vector<Op> ops = {
        {"add", 12.0 * n, [&] { return x.add(y); }},
        {"mul", 12.0 * n, [&] { return x.mul(y); }},
        {"exp", 8.0 * n, [&] { return x.exp(); }},
        {"to_dtype f16", 6.0 * n, [&] { return x.to_dtype(DType::F16); }},
        {"sum last dim (1024)", 4.0 * n + 4.0 * n / 1024, [&] { return rows.sum(-1); }},
    };
    for (const Op& op : ops) {
      Timing t;
      const std::string why = unsupported_reason([&] {
        t = measure(
            [&] {
              const Tensor r = op.run();
              dev.synchronize();
            },
            3, 20, budget_ms, warm_ms);
      });
      if (!why.empty()) {
        table.add_row({op.name, size_label(n), "unsupported"});
        add_note(notes, std::string(op.name) + ": " + why);
        continue;
      }
      const double g = gbps(op.bytes, t.median_ms);
      table.add_row({op.name, size_label(n), fixed(op.bytes / 1e6, 1), fixed(t.first_ms, 3) + " ms",
                     fixed(t.median_ms, 3) + " ms", fixed(g, 1), fixed(anchor_gbps, 1),
                     fixed(g / anchor_gbps, 2) + "x", memcpy_new_gbps});
    }
  }
  table.print(os);
  os << "\nGB/s = bytes the op must move / median time (add, mul: 2 reads + 1 write; exp: read + "
        "write; to_dtype: 4-byte read + 2-byte write; sum: read + a small write). On the CPU "
        "memcpy "
        "moves the same n floats once (read + write), single-threaded, into a buffer it reuses "
        "(the ratio's anchor) and into a buffer malloc'd for each copy; on a GPU the anchor is a "
        "device-to-device copy of the same n floats (the driver's copy, timed like the ops, after "
        "300 ms of warm-up); wick allocates each output, as a program would. Goal: add of 16M "
        "f32 >= 0.8x the anchor.\n";
  print_notes(os, notes);
  return true;
}

bool bench_overhead(const BenchContext& ctx) {
  print_title(ctx, "overhead");
  const Device dev = ctx.device();
  std::ostream& os = ctx.os();
  const Tensor a = Tensor::from_vec(std::vector<float>{1.5f}, {1}, dev);
  const Tensor b = Tensor::from_vec(std::vector<float>{-0.25f}, {1}, dev);
  const Tensor m = Tensor::from_vec(std::vector<float>{0.5f}, {1, 1}, dev);
  const int batches = ctx.quick ? 5 : 41, per_batch = ctx.quick ? 50 : 250;
  struct Op {
    const char* name;
    std::function<Tensor()> run;
  };
  const std::vector<Op> ops = {
      {"add", [&] { return a.add(b); }},
      {"mul", [&] { return a.mul(b); }},
      {"exp", [&] { return a.exp(); }},
      {"sum", [&] { return a.sum(0); }},
      {"matmul 1x1", [&] { return m.matmul(m); }},
      {"narrow (a view)", [&] { return a.narrow(0, 0, 1); }},
  };
  std::vector<std::string> notes;
  Table table({"op", "µs/op (median)", "µs/op (best batch)", "ops timed"});
  for (const Op& op : ops) {
    const std::string why = unsupported_reason([&] { op.run(); });  // first use apart
    if (!why.empty()) {
      table.add_row({op.name, "unsupported"});
      add_note(notes, std::string(op.name) + ": " + why);
      continue;
    }
    dev.synchronize();
    std::vector<double> us;
    for (int i = 0; i < batches; i++) {
      const double ms = time_ms([&] {
        for (int j = 0; j < per_batch; j++) op.run();
        dev.synchronize();
      });
      us.push_back(ms * 1000.0 / per_batch);
    }
    table.add_row({op.name, fixed(median(us), 3), fixed(*std::min_element(us.begin(), us.end()), 3),
                   std::to_string(batches) + " × " + std::to_string(per_batch)});
  }
  table.print(os);
  os << "\nEach batch runs the op " << per_batch
     << " times on 1-element f32 tensors (creating and dropping the result), then synchronizes; "
        "the median over batches of time / ops. Goal: <= 1 µs per op.\n";
  print_notes(os, notes);
  return true;
}

}  // namespace wick::cli
