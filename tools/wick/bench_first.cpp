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

// A second device of the same kind: a new Vulkan device has its own id and kernel caches; the
// CPU has exactly one device.
Device open_second_device(const Device& dev, bool& same) {
  same = dev.kind() != DeviceKind::Vulkan;
  return same ? dev : Device::vulkan(dev.ordinal());
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
    const Timing t = measure(
        [&] {
          const Tensor r = op();
          d.synchronize();
        },
        5, 5, 0);
    print_op(label, t.first_ms, t.median_ms);
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

  auto ms = [](const std::string& v) {
    return std::stod(v) < 0 ? std::string("") : fixed(std::stod(v), 3) + " ms";
  };
  Table table(
      {"op", "first", "later (median of 5)", "second process: first", "second process: later"});
  std::vector<std::string> notes;
  for (const auto& r : p1) {
    if (r[0] == "note" && r.size() == 2) notes.push_back(r[1]);
    if (r[0] != "op" || r.size() != 4) continue;
    const auto it = second.find(r[1]);
    if (it == second.end())
      fail(ErrorKind::Internal, "bench first", "the second process did not report '", r[1], "'");
    table.add_row({r[1], ms(r[2]), ms(r[3]), ms(it->second.first), ms(it->second.second)});
  }
  if (second.empty()) fail(ErrorKind::Internal, "bench first", "the workers reported no ops");
  table.print(os);
  os << "\nEach op is timed to completion (synchronize). Both column pairs come from fresh "
        "processes of this binary, run one after the other.\n";
  for (const std::string& n : notes) os << "Note: " << n << ".\n";
  os << "\n";
  return true;
}

}  // namespace wick::cli
