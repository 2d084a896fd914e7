// The seed's metal_first: the first use of each op (which on a GPU compiles its kernels) against
// the median of the next five, in a fresh process, then again in a second fresh process (where
// on-disk caches, if any, are warm). Both processes are re-executions of this binary.
#include <functional>
#include <iostream>
#include <map>

#include "bench.h"
#include "process.h"
#include "report.h"
#include "wick/wick.h"

namespace wick::cli {

namespace {

void print_op(const std::string& label, double first_ms, double later_ms) {
  std::cout << "op\t" << label << '\t' << first_ms << '\t' << later_ms << "\n";
}

// A second device of the same kind: a new GPU device has its own id and kernel caches; the CPU
// has exactly one device.
Device open_second_device(const Device& dev, bool& same) {
  same = dev.kind() == DeviceKind::Cpu;
  if (same) return dev;
  return dev.kind() == DeviceKind::Cuda ? Device::cuda(dev.ordinal())
                                        : Device::vulkan(dev.ordinal());
}

}  // namespace

void first_worker(const BenchContext& ctx) {
  const auto t0 = Clock::now();
  const Device dev = ctx.device();
  dev.synchronize();
  print_op("new device", ms_since(t0), -1);

  const int64_t n = ctx.quick ? 64 : 512, n2 = ctx.quick ? 60 : 500;
  // Inputs come from host data so that no kernel runs before the timed ops.
  const Tensor x = Tensor::from_vec(random_floats(n * n, 1), {n, n}, dev);
  const Tensor y = Tensor::from_vec(random_floats(n * n, 2), {n, n}, dev);
  const Tensor z = Tensor::from_vec(random_floats(n2 * n2, 3), {n2, n2}, dev);
  dev.synchronize();

  auto report = [](const std::string& label, const Device& d, const std::function<Tensor()>& op) {
    Timing t;
    const std::string why = unsupported_reason([&] {
      t = measure(
          [&] {
            const Tensor r = op();
            d.synchronize();
          },
          5, 5, 0);
    });
    if (why.empty())
      print_op(label, t.first_ms, t.median_ms);
    else
      std::cout << "op\t" << label << "\tunsupported\t" << why << "\n";
  };
  const std::string sn = std::to_string(n), sn2 = std::to_string(n2);
  report("add f32", dev, [&] { return x.add(y); });
  report("mul f32", dev, [&] { return x.mul(y); });
  report("exp f32", dev, [&] { return x.exp(); });
  report("matmul " + sn, dev, [&] { return x.matmul(y); });
  report("matmul " + sn2, dev, [&] { return z.matmul(z); });
  report("sum_keepdim", dev, [&] { return x.sum_keepdim(1); });
  report("softmax_last_dim", dev, [&] { return x.softmax_last_dim(); });
  report("to_dtype f16", dev, [&] { return x.to_dtype(DType::F16); });

  bool same = false;
  const auto t1 = Clock::now();
  const Device dev2 = open_second_device(dev, same);
  dev2.synchronize();
  print_op(same ? "second device (the same device)" : "second device: new device", ms_since(t1),
           -1);
  const Tensor x2 = x.to_device(dev2), y2 = y.to_device(dev2);
  dev2.synchronize();
  report("second device: add f32", dev2, [&] { return x2.add(y2); });
  report("second device: matmul " + sn, dev2, [&] { return x2.matmul(y2); });
  if (same)
    std::cout << "note\t" << dev.name()
              << " has one device: the second-device rows reuse it (same id " << dev.id() << ")\n";
}

bool bench_first(const BenchContext& ctx) {
  print_title(ctx, "first");
  std::ostream& os = ctx.os();
  const auto p1 =
      parse_worker_output(run_self(worker_args(ctx, "first"), {}, "first (first process)"));
  const auto p2 =
      parse_worker_output(run_self(worker_args(ctx, "first"), {}, "first (second process)"));
  std::map<std::string, std::pair<std::string, std::string>> second;
  for (const auto& r : p2)
    if (r[0] == "op" && r.size() == 4) second[r[1]] = {r[2], r[3]};

  // "first" and "later" cells of one process's op line; an unsupported op adds a note.
  std::vector<std::string> notes;
  auto cells = [&](const std::string& label, const std::string& first, const std::string& later) {
    if (first == "unsupported") {
      add_note(notes, label + ": " + later);
      return std::pair<std::string, std::string>{"unsupported", ""};
    }
    auto ms = [](const std::string& v) {
      return std::stod(v) < 0 ? std::string("") : fixed(std::stod(v), 3) + " ms";
    };
    return std::pair<std::string, std::string>{ms(first), ms(later)};
  };
  Table table(
      {"op", "first", "later (median of 5)", "second process: first", "second process: later"});
  for (const auto& r : p1) {
    if (r[0] == "note" && r.size() == 2) add_note(notes, r[1]);
    if (r[0] != "op" || r.size() != 4) continue;
    const auto it = second.find(r[1]);
    if (it == second.end())
      fail(ErrorKind::Internal, "bench first", "the second process did not report '", r[1], "'");
    const auto c1 = cells(r[1], r[2], r[3]);
    const auto c2 = cells(r[1], it->second.first, it->second.second);
    table.add_row({r[1], c1.first, c1.second, c2.first, c2.second});
  }
  if (second.empty()) fail(ErrorKind::Internal, "bench first", "the workers reported no ops");
  table.print(os);
  os << "\nEach op is timed to completion (synchronize). Both column pairs come from fresh "
        "processes of this binary, run one after the other.\n";
  print_notes(os, notes);
  return true;
}

}  // namespace wick::cli
