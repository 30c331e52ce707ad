#include "examples/translate/batched_resume.hpp"

#include <fmt/format.h>

#include "examples/common/cli.hpp"
#include "nn/checkpoint.hpp"
#include "tensor/error.hpp"

namespace attograd::translate_batched {

using translation::EpochReport;
using translation::TrainingPosition;

namespace {

constexpr const char* kSettingsKey = "resume.settings";
constexpr const char* kProgressKey = "resume.progress";

nlohmann::json progress_json(const TrainingPosition& position) {
  nlohmann::json epochs = nlohmann::json::array();
  for (const EpochReport& epoch : position.report.epochs) {
    epochs.push_back({{"epoch", epoch.epoch},
                      {"loss", epoch.loss},
                      {"first_batch_loss", epoch.first_batch_loss},
                      {"tokens", epoch.tokens},
                      {"seconds", epoch.seconds},
                      {"lr", epoch.lr}});
  }
  return {{"epochs_done", position.epochs_done},
          {"batches_done", position.batches_done},
          {"batch_order", position.batch_order},
          {"dropout_generators", position.dropout_generators},
          {"loss_sum", position.loss_sum},
          {"tokens", position.tokens},
          {"first_batch_loss", position.first_batch_loss},
          {"seconds", position.seconds},
          {"epochs", epochs},
          {"final_loss", position.report.final_loss},
          {"total_tokens", position.report.tokens},
          {"total_seconds", position.report.seconds}};
}

TrainingPosition position_from_json(const nlohmann::json& json) {
  TrainingPosition position;
  position.epochs_done = json.at("epochs_done").get<int64_t>();
  position.batches_done = json.at("batches_done").get<int64_t>();
  position.batch_order = json.at("batch_order").get<std::string>();
  position.dropout_generators = json.at("dropout_generators").get<std::vector<std::string>>();
  position.loss_sum = json.at("loss_sum").get<double>();
  position.tokens = json.at("tokens").get<int64_t>();
  position.first_batch_loss = json.at("first_batch_loss").get<double>();
  position.seconds = json.at("seconds").get<double>();
  for (const nlohmann::json& epoch : json.at("epochs")) {
    EpochReport report;
    report.epoch = epoch.at("epoch").get<int64_t>();
    report.loss = epoch.at("loss").get<double>();
    report.first_batch_loss = epoch.at("first_batch_loss").get<double>();
    report.tokens = epoch.at("tokens").get<int64_t>();
    report.seconds = epoch.at("seconds").get<double>();
    report.lr = epoch.at("lr").get<double>();
    position.report.epochs.push_back(report);
  }
  position.report.final_loss = json.at("final_loss").get<double>();
  position.report.tokens = json.at("total_tokens").get<int64_t>();
  position.report.seconds = json.at("total_seconds").get<double>();
  return position;
}

// The JSON of metadata entry `key`, or an Error naming the file and the key.
nlohmann::json json_entry(const std::string& path, const nn::Metadata& metadata, const char* key) {
  const auto entry = metadata.find(key);
  check(entry != metadata.end(),
        "{}: the checkpoint has no '{}' entry, so it cannot be resumed; it was written by an "
        "older `translate train` — train again, with --checkpoint-every to keep runs resumable",
        path, key);
  const nlohmann::json json = nlohmann::json::parse(entry->second, nullptr, false);
  check(json.is_object(), "{}: the checkpoint's '{}' entry is not a JSON object", path, key);
  return json;
}

template <typename T>
void read_typed(const std::string& path, const nlohmann::json& settings, const char* key, T& value,
                const char* kind) {
  const auto found = settings.find(key);
  const bool fits =
      found != settings.end() && (std::is_same_v<T, std::string> ? found->is_string()
                                  : std::is_same_v<T, double>    ? found->is_number()
                                                                 : found->is_number_integer());
  check(fits, "{}: the checkpoint's '{}' entry has no {} '{}'", path, kSettingsKey, kind, key);
  value = found->get<T>();
}

// A flag named on the command line must agree with the checkpoint it resumes.
template <typename T>
void check_unchanged(const std::string& path, const char* flag, const T& given, bool named,
                     const T& saved) {
  if (!named || given == saved) return;
  throw cli::UsageError(
      fmt::format("--{} {}: --resume continues {} with its own settings (--{} {}); leave --{} out",
                  flag, given, path, flag, saved, flag));
}

}  // namespace

void add_resume_entries(nn::Metadata& metadata, const nlohmann::json& settings,
                        const TrainingPosition& position) {
  metadata[kSettingsKey] = settings.dump();
  metadata[kProgressKey] = progress_json(position).dump();
}

ResumePoint read_resume_point(const std::string& path, const std::string& recipe) {
  const nn::Metadata metadata = nn::read_metadata(path);
  const auto found = metadata.find("recipe");
  const std::string saved = found == metadata.end() ? "tutorial" : found->second;
  check(saved == recipe,
        "{}: --resume was given a checkpoint of the {} recipe; continue it with --recipe {}", path,
        saved, saved);
  ResumePoint point;
  for (const auto& [key, text] : {std::pair{"source_vocabulary", &point.source_vocabulary},
                                  std::pair{"target_vocabulary", &point.target_vocabulary}}) {
    const auto entry = metadata.find(key);
    check(entry != metadata.end(), "{}: the checkpoint has no '{}' entry", path, key);
    *text = entry->second;
  }
  point.settings = json_entry(path, metadata, kSettingsKey);
  try {
    point.position = position_from_json(json_entry(path, metadata, kProgressKey));
  } catch (const nlohmann::json::exception& error) {
    fail("{}: the checkpoint's '{}' entry is damaged ({})", path, kProgressKey, error.what());
  }
  return point;
}

void check_resume_vocabularies(const std::string& path, const ResumePoint& point,
                               const text::BatchedData& data) {
  check(data.source_vocabulary.serialize() == point.source_vocabulary &&
            data.target_vocabulary.serialize() == point.target_vocabulary,
        "{}: the vocabularies of the data ({} source, {} target words) are not the checkpoint's; "
        "was the data file changed? --resume needs the data it was trained on",
        path, data.source_vocabulary.size(), data.target_vocabulary.size());
}

void resume_setting(const std::string& path, const nlohmann::json& settings, const char* key,
                    const char* flag, int64_t& value, bool given) {
  int64_t saved = 0;
  read_typed(path, settings, key, saved, "whole number");
  check_unchanged(path, flag, value, given, saved);
  value = saved;
}
void resume_setting(const std::string& path, const nlohmann::json& settings, const char* key,
                    const char* flag, double& value, bool given) {
  double saved = 0;
  read_typed(path, settings, key, saved, "number");
  check_unchanged(path, flag, value, given, saved);
  value = saved;
}
void resume_setting(const std::string& path, const nlohmann::json& settings, const char* key,
                    const char* flag, std::string& value, bool given) {
  std::string saved;
  read_typed(path, settings, key, saved, "text");
  check_unchanged(path, flag, value, given, saved);
  value = saved;
}

void check_resume_epochs(const std::string& path, const ResumePoint& point, int64_t epochs) {
  check(point.position.epochs_done <= epochs,
        "{}: the checkpoint is at epoch {}, beyond --epochs {}; pass a larger --epochs to "
        "continue it",
        path, point.position.epochs_done, epochs);
}

}  // namespace attograd::translate_batched
