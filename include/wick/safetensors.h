// safetensors files: an 8-byte little-endian header length N, N bytes of JSON
// {name: {"dtype", "shape", "data_offsets": [begin, end]}, "__metadata__": {str: str}}, then the
// tensor bytes (offsets are relative to the end of the header).
//
// Reading maps the file (MAP_PRIVATE): on the CPU a loaded tensor points straight into the mapping
// (no copy) and keeps it alive; an in-place op on it copies the touched page and never writes the
// file. A tensor whose bytes are not aligned for its element type is copied instead. On other
// devices the bytes are uploaded. Every header field is checked before any tensor byte is read:
// a malformed file throws Error(Parse) or Error(Io) naming the path (and the tensor), never reads
// outside the file; the header parses in time linear in its size. A path that is not a regular
// file (a FIFO, a device) is refused without reading or waiting. Gaps between tensors are
// allowed; overlaps are not.
//
// dtypes F32 F16 BF16 F64 U8 U32 I64 map to wick's; a tensor of any other dtype (I8, I16, BOOL,
// F8_*, ...) is listed but loading it throws Error(Unsupported) naming the tensor and the dtype.
// The file must not shrink while mapped (another process truncating it would fault the reader).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "wick/device.h"
#include "wick/tensor.h"

namespace wick {

// One mapped, validated safetensors file. Cheap to copy (shares the mapping).
class SafetensorsFile {
 public:
  // What the header says about one tensor.
  struct Entry {
    std::string dtype;  // as written in the file: "F32", "BF16", "I8", ...
    Shape shape;
    uint64_t begin = 0, end = 0;  // byte range in the data section
  };

  // Maps and validates `path`; throws Error(Io) / Error(Parse) naming the path.
  explicit SafetensorsFile(const std::string& path);

  const std::string& path() const;
  // Tensor names in the order of their data in the file.
  const std::vector<std::string>& names() const;
  bool contains(const std::string& name) const;
  // Throws Error(OutOfRange) when there is no such tensor.
  const Entry& entry(const std::string& name) const;
  // The tensor on `dev` (see the file comment for when it is a zero-copy view of the mapping).
  Tensor tensor(const std::string& name, const Device& dev = Device::cpu()) const;
  // The "__metadata__" strings (empty when the file has none).
  const std::map<std::string, std::string>& metadata() const;

  // The whole mapped file: [mapped_data(), mapped_data() + mapped_size()).
  const std::byte* mapped_data() const;
  size_t mapped_size() const;

 private:
  struct Impl;
  std::shared_ptr<const Impl> impl_;
};

// Every tensor of the file, by name. Throws Error(Unsupported) when any tensor has a dtype wick
// lacks (use SafetensorsFile to read the others).
std::map<std::string, Tensor> load_safetensors(const std::string& path,
                                               const Device& dev = Device::cpu());

// Writes `tensors` (any device, any layout) and `metadata`. The bytes go to a temporary file in
// the same folder that is then renamed over `path`, so `path` is never seen half-written, and a
// failed or killed save leaves nothing behind. A symlink at `path` is followed (its target is
// replaced and the link stays); an existing file keeps its permission bits.
// Tensor data is ordered by element size, then name, so every tensor is aligned for its type;
// the header is padded with spaces to a multiple of 8 bytes.
void save_safetensors(const std::string& path, const std::map<std::string, Tensor>& tensors,
                      const std::map<std::string, std::string>& metadata = {});

// The safetensors dtype name of a wick dtype ("F32", "BF16", ...).
const char* safetensors_dtype_name(DType dt);

}  // namespace wick
