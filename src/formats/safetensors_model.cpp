// SafetensorsModel: a Hugging Face folder of safetensors shards, with or without model.safetensors.index.json.
#include <algorithm>
#include <filesystem>
#include <set>

#include <nlohmann/json.hpp>

#include "formats/json_parse.h"
#include "formats/mapped_file.h"
#include "formats/safetensors.h"

namespace saker {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr const char* kIndexName = "model.safetensors.index.json";
constexpr const char* kSingleName = "model.safetensors";

// A shard named by an index must stay inside the model's folder.
bool is_safe_relative(const std::string& name) {
  if (name.empty() || name.find('\0') != std::string::npos) return false;
  const fs::path p(name);
  if (p.is_absolute() || p.has_root_path()) return false;
  for (const auto& part : p) {
    if (part == "..") return false;
  }
  return true;
}

Result<json> read_json_file(const std::string& path) {
  SAKER_ASSIGN_OR_RETURN(std::shared_ptr<MappedFile> file, MappedFile::open(path));
  const std::string_view text(reinterpret_cast<const char*>(file->data()), file->size());
  JsonParseOptions options;
  options.reject_duplicate_keys = true;
  return parse_json(text, path, 0, options);
}

}  // namespace

const nlohmann::json& SafetensorsModel::index_metadata() const {
  static const json kNull;
  return index_metadata_ ? *index_metadata_ : kNull;
}

std::vector<std::string> SafetensorsModel::tensor_names() const {
  std::vector<std::string> names;
  names.reserve(by_name_.size());
  for (const auto& [name, loc] : by_name_) names.push_back(name);
  return names;
}

const SafetensorsTensorInfo* SafetensorsModel::find_tensor(const std::string& name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : &files_[it->second.file].tensors()[it->second.tensor];
}

const SafetensorsFile* SafetensorsModel::file_of(const std::string& name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : &files_[it->second.file];
}

Result<TensorView> SafetensorsModel::view(const std::string& name) const {
  auto it = by_name_.find(name);
  if (it == by_name_.end()) {
    return make_error(StatusCode::kNotFound, "{}: no tensor '{}' in the model's safetensors files", folder_, name);
  }
  const SafetensorsFile& file = files_[it->second.file];
  Result<TensorView> v = file.view(file.tensors()[it->second.tensor]);
  if (!v.ok()) return v.status().with_context(file.path());
  return v;
}

Result<SafetensorsModel> SafetensorsModel::open(const std::string& path) {
  SafetensorsModel m;
  std::error_code ec;
  std::string index_path;
  std::vector<std::string> shard_paths;  // without an index

  if (fs::is_directory(path, ec)) {
    m.folder_ = path;
    const fs::path folder(path);
    if (fs::exists(folder / kIndexName, ec)) {
      index_path = (folder / kIndexName).string();
    } else if (fs::exists(folder / kSingleName, ec)) {
      shard_paths.push_back((folder / kSingleName).string());
    } else {
      for (const auto& entry : fs::directory_iterator(folder, ec)) {
        if (entry.path().extension() == ".safetensors" && entry.is_regular_file(ec)) {
          shard_paths.push_back(entry.path().string());
        }
      }
      if (ec) return make_error(StatusCode::kIoError, "{}: cannot list the folder: {}", path, ec.message());
      std::sort(shard_paths.begin(), shard_paths.end());
      if (shard_paths.empty()) {
        return make_error(StatusCode::kNotFound, "{}: no {}, {} or other *.safetensors file", path, kIndexName,
                          kSingleName);
      }
    }
  } else if (fs::is_regular_file(path, ec)) {
    m.folder_ = fs::path(path).parent_path().string();
    if (fs::path(path).extension() == ".json") index_path = path;
    else shard_paths.push_back(path);
  } else {
    return make_error(StatusCode::kNotFound, "{}: no such folder or file", path);
  }

  if (index_path.empty()) {
    for (const std::string& shard : shard_paths) {
      SAKER_ASSIGN_OR_RETURN(SafetensorsFile file, SafetensorsFile::open(shard));
      const size_t file_index = m.files_.size();
      for (size_t k = 0; k < file.tensors().size(); ++k) {
        const std::string& name = file.tensors()[k].name;
        auto [it, inserted] = m.by_name_.emplace(name, Location{file_index, k});
        if (!inserted) {
          return make_error(StatusCode::kCorruptFile, "{}: tensor '{}' is in both {} and {}", path, name,
                            m.files_[it->second.file].path(), shard);
        }
      }
      m.files_.push_back(std::move(file));
    }
    return m;
  }

  // With an index: weight_map {tensor name: shard file name} is the list of the model's tensors.
  SAKER_ASSIGN_OR_RETURN(json index, read_json_file(index_path));
  if (!index.is_object()) {
    return make_error(StatusCode::kCorruptFile, "{}: expected a JSON object, got {}", index_path, json_brief(index));
  }
  if (auto meta = index.find("metadata"); meta != index.end() && !meta->is_null()) {
    if (!meta->is_object()) {
      return make_error(StatusCode::kCorruptFile, "{}: \"metadata\" is {}, expected an object", index_path,
                        json_brief(*meta));
    }
    m.index_metadata_ = std::make_shared<json>(*meta);
  }
  const auto weight_map = index.find("weight_map");
  if (weight_map == index.end() || !weight_map->is_object()) {
    return make_error(StatusCode::kCorruptFile, "{}: expected a \"weight_map\" object of tensor name -> file name",
                      index_path);
  }
  std::map<std::string, size_t> file_by_name;
  const fs::path base = fs::path(index_path).parent_path();
  for (const auto& [name, shard] : weight_map->items()) {
    if (!shard.is_string()) {
      return make_error(StatusCode::kCorruptFile, "{}: weight_map[\"{}\"] is {}, expected a file name", index_path, name,
                        json_brief(shard));
    }
    const std::string shard_name = shard.get<std::string>();
    if (!is_safe_relative(shard_name)) {
      return make_error(StatusCode::kCorruptFile, "{}: weight_map[\"{}\"] = \"{}\" is not a file name inside the folder",
                        index_path, name, shard_name);
    }
    auto [it, inserted] = file_by_name.emplace(shard_name, m.files_.size());
    if (inserted) {
      const std::string shard_path = (base / shard_name).string();
      Result<SafetensorsFile> file = SafetensorsFile::open(shard_path);
      if (!file.ok()) {
        return file.status().with_context(fmt::format("{} names shard {} (for tensor '{}')", index_path, shard_name, name));
      }
      m.files_.push_back(std::move(file).value());
    }
    const SafetensorsFile& file = m.files_[it->second];
    const SafetensorsTensorInfo* info = file.find_tensor(name);
    if (!info) {
      return make_error(StatusCode::kCorruptFile, "{}: weight_map puts tensor '{}' in {}, which has no such tensor",
                        index_path, name, file.path());
    }
    m.by_name_.emplace(name, Location{it->second, static_cast<size_t>(info - file.tensors().data())});
  }
  return m;
}

}  // namespace saker
